// Package roofline measures what bounds the engine on this computer — the arithmetic peak of its cores
// (float32 multiply-adds and, where the CPU has avx512_bf16, bfloat16 dot products), the rate of the
// engine's own best products, and memory bandwidth — and counts the FLOPs and bytes of the benchmarks'
// work, so that a measured time can be stated as a fraction of what the machine could do.
// The benchmarks (engine/cmd/enginebench, cmd/rolloutbench) share it.
package roofline

import (
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/trainyard/trainyard/engine/linalg"
)

// Machine is one measurement of this computer, with Threads threads.
type Machine struct {
	Threads int
	// FMAPeak is the float32 multiply-add peak (FLOP/s): Threads goroutines at once, each running a loop of
	// independent register-only VFMADD231PS at the widest vectors the CPU has (FMAName says which). Where
	// there is no such loop (not amd64, or no FMA) it is SgemmPeak.
	FMAPeak float64
	FMAName string
	// DotPeak is the same for VDPBF16PS (bfloat16 pairs, float32 accumulation) on an avx512_bf16 CPU, 0
	// elsewhere.
	DotPeak float64
	DotName string
	// AMXPeak is the same for AMX tiles (TDPBF16PS: 16 × 16 × 32 bfloat16 multiply-adds into float32) where
	// the CPU has them and the kernel hands them out, 0 elsewhere: the peak of the engine's products with
	// the frozen base there (linalg.AMX), training's and chat's.
	AMXPeak float64
	AMXName string
	// SgemmPeak is linalg.Sgemm's rate on a 1024² float32 product; DotKernelPeak linalg.SgemmBF16Infer's on
	// a decoding-shaped product with bfloat16 products (AMX tiles where the CPU has them, else dot products;
	// 0 where they are off): what the engine's own
	// kernels reach, against which FMAPeak and DotPeak say how far the kernels are from the cores' limit.
	SgemmPeak, DotKernelPeak float64
	// Bandwidth is the faster of two reads of a buffer far larger than the caches, on every thread
	// (bytes/s): GoBandwidth, a plain Go loop summing uint64s, and KernelBandwidth, the engine's bfloat16
	// matrix-vector kernel (the batch-1 decoding product) over a bfloat16 matrix.
	Bandwidth, GoBandwidth, KernelBandwidth float64
}

// KernelPeak is the faster of the engine's two products (FLOP/s): the rate a decoding step's products can
// reach in the engine as it is.
func (m Machine) KernelPeak() float64 { return math.Max(m.SgemmPeak, m.DotKernelPeak) }

// Measure measures everything with threads goroutines (the kernel rates with the engine's own parallelism,
// GOMAXPROCS), each figure the median of several repetitions, and frees its buffers after.
func Measure(threads int) Machine {
	defer debug.FreeOSMemory()
	m := Machine{Threads: threads, GoBandwidth: goBandwidth(threads), KernelBandwidth: kernelBandwidth(threads),
		SgemmPeak: sgemmPeak()}
	m.Bandwidth = math.Max(m.GoBandwidth, m.KernelBandwidth)
	if linalg.BF16Dot() {
		m.DotKernelPeak = dotKernelPeak()
	}
	m.FMAPeak, m.FMAName = m.SgemmPeak, "linalg.Sgemm (no FMA loop on this CPU)"
	if loop, flops, name := linalg.FMALoop(); loop != nil {
		m.FMAPeak, m.FMAName = instructionPeak(threads, loop, flops), name
	}
	if loop, flops, name := linalg.DotLoop(); loop != nil {
		m.DotPeak, m.DotName = instructionPeak(threads, loop, flops), name
	}
	if loop, flops := linalg.AMXLoop(); loop != nil {
		m.AMXPeak, m.AMXName = instructionPeak(threads, loop, flops), "AMX BF16 tiles"
	}
	return m
}

// reps is how many times each figure is measured; the median is kept. The median rather than the best: on
// the 2-core VM the same product ran at 100–105 GFLOP/s most of the time and at 150–200 now and then, so the
// best of a few runs swung a bound by 2× from one invocation to the next.
const reps = 21

func typical(fn func() time.Duration) time.Duration {
	ds := make([]time.Duration, reps)
	for i := range ds {
		ds[i] = fn()
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// instructionPeak runs loop (flops FLOPs an iteration) on threads goroutines at once, each on its own OS
// thread, for about 20 ms a repetition.
func instructionPeak(threads int, loop func(int), flops float64) float64 {
	const iters = 1 << 20 // ~12–25 ms at 1–2 iterations per 10 ns
	loop(iters / 16)      // warm-up: the first wide instructions of a core can run at a lower rate
	d := typical(func() time.Duration {
		return parallel(threads, threads, func(_, _, _ int) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			loop(iters)
		})
	})
	return flops * iters * float64(threads) / d.Seconds()
}

// streamBytes is the size of the buffers streamed: far beyond any cache.
const streamBytes = 256 << 20

// parallel runs fn(t, lo, hi) for the threads parts t of [0, n), at once, and returns how long they took.
func parallel(threads, n int, fn func(t, lo, hi int)) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(t, n*t/threads, n*(t+1)/threads)
		}()
	}
	wg.Wait()
	return time.Since(start)
}

var sink uint64 // keeps the summing loop from being optimised away

func goBandwidth(threads int) float64 {
	buf := make([]uint64, streamBytes/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	sums := make([]uint64, threads*8) // one cache line apart
	d := typical(func() time.Duration {
		return parallel(threads, len(buf), func(t, lo, hi int) {
			var a, b, c, e uint64
			x := buf[lo:hi]
			for len(x) >= 4 {
				a += x[0]
				b += x[1]
				c += x[2]
				e += x[3]
				x = x[4:]
			}
			sums[t*8] = a + b + c + e
		})
	})
	for _, s := range sums {
		sink += s
	}
	runtime.KeepAlive(buf)
	return streamBytes / d.Seconds()
}

func kernelBandwidth(threads int) float64 {
	const k = 1024
	n := streamBytes / 2 / k
	b := make([]uint16, n*k)
	for i := range b {
		b[i] = linalg.ToBF16(float32(i%7) - 3)
	}
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	y := make([]float32, n)
	d := typical(func() time.Duration {
		return parallel(threads, n, func(_, lo, hi int) {
			linalg.GemvBF16T(nil, hi-lo, k, 1, x, b[lo*k:hi*k], k, 0, y[lo:hi])
		})
	})
	return streamBytes / d.Seconds()
}

func sgemmPeak() float64 {
	const n = 1024
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7)-3, float32(i%5)-2
	}
	for range 3 { // warm-up
		linalg.Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
	}
	d := typical(func() time.Duration {
		start := time.Now()
		linalg.Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		return time.Since(start)
	})
	return 2 * n * n * n / d.Seconds()
}

// dotKernelPeak is linalg.SgemmBF16Infer's rate on a decoding-shaped product: 64 rows of activations times
// 4096 × 1024 bfloat16 weights (8 MiB, streamed from L3 at best), with bfloat16 dot products.
func dotKernelPeak() float64 {
	const m, n, k = 64, 4096, 1024
	a, c := make([]float32, m*k), make([]float32, m*n)
	b := make([]uint16, n*k)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = linalg.ToBF16(float32(i%5) - 2)
	}
	run := func() { linalg.SgemmBF16Infer(false, true, m, n, k, 1, a, k, b, k, 0, c, n) }
	for range 3 { // warm-up
		run()
	}
	d := typical(func() time.Duration {
		start := time.Now()
		run()
		return time.Since(start)
	})
	return 2 * m * n * k / d.Seconds()
}

// Max is the higher of each of m's and o's figures: what both measurements together say the machine can
// at least do. Peaks and bandwidth are ceilings that other load only lowers, so on a shared machine the
// benchmarks measure before and after their runs and keep the higher; the names are m's.
func (m Machine) Max(o Machine) Machine {
	m.FMAPeak, m.DotPeak, m.AMXPeak = math.Max(m.FMAPeak, o.FMAPeak), math.Max(m.DotPeak, o.DotPeak), math.Max(m.AMXPeak, o.AMXPeak)
	m.SgemmPeak, m.DotKernelPeak = math.Max(m.SgemmPeak, o.SgemmPeak), math.Max(m.DotKernelPeak, o.DotKernelPeak)
	m.GoBandwidth, m.KernelBandwidth = math.Max(m.GoBandwidth, o.GoBandwidth), math.Max(m.KernelBandwidth, o.KernelBandwidth)
	m.Bandwidth = math.Max(m.GoBandwidth, m.KernelBandwidth)
	return m
}
