package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/engine/model"
)

// machine is what bounds a decoding step on this computer: how fast memory streams and how fast the
// engine's best kernel multiplies.
type machine struct {
	// Bandwidth is the faster of two reads of a buffer far larger than the caches, on every thread (bytes/s).
	Bandwidth float64
	// GoBandwidth and KernelBandwidth are the two: a plain Go loop summing uint64s, and the engine's
	// bfloat16 matrix-vector kernel (the batch-1 decoding product) over a bfloat16 matrix.
	GoBandwidth, KernelBandwidth float64
	// KernelPeak is the rate of the engine's best matrix product for decoding (FLOP/s): linalg.Sgemm's on a
	// 1024² float32 product or, on a CPU with avx512_bf16 (where the service decodes with bfloat16 dot
	// products, TRAINYARD_CHAT_BF16_DOT), linalg.SgemmBF16Infer's on a 64-row product over 4096 × 1024
	// bfloat16 weights, whichever is faster; not the CPU's FMA peak, which a pure-Go measure cannot reach.
	KernelPeak float64
	// SgemmPeak and DotPeak are the two (DotPeak 0 without avx512_bf16).
	SgemmPeak, DotPeak float64
}

// stepCost is what one decoding step of a batch reads and computes in its matrix products.
type stepCost struct {
	// WeightBytes are the bfloat16 weights every step reads once whatever the batch: the seven projections
	// of every layer and the output head (embedding rows looked up, norms and biases are left out).
	WeightBytes float64
	// FLOPs are 2 · those weights' parameters · the batch rows (attention over the cache is left out).
	FLOPs float64
}

// decodeStepCost is the cost of one decoding step of rows sequences at shape cfg.
func decodeStepCost(cfg model.Config, rows int) stepCost {
	params := cfg.VocabSize * cfg.Dim // the output head (the embedding, when tied)
	for m := 0; m < model.NumModules; m++ {
		o, i := cfg.Shape(m)
		params += cfg.Layers * o * i
	}
	return stepCost{WeightBytes: 2 * float64(params), FLOPs: 2 * float64(params) * float64(rows)}
}

// bound is the shortest a step of cost c can take here: reading its weights once at full bandwidth, or
// its products at the kernel peak, whichever is longer.
func (m machine) bound(c stepCost) time.Duration {
	s := math.Max(c.WeightBytes/m.Bandwidth, c.FLOPs/m.KernelPeak)
	return time.Duration(s * float64(time.Second))
}

// measureMachine measures bandwidth and kernel peak with threads goroutines (the kernel peak with Sgemm's
// own parallelism, GOMAXPROCS), each the median of several repetitions, and frees the buffers after.
func measureMachine(threads int) machine {
	defer debug.FreeOSMemory()
	m := machine{GoBandwidth: goBandwidth(threads), KernelBandwidth: kernelBandwidth(threads), SgemmPeak: sgemmPeak()}
	m.Bandwidth = math.Max(m.GoBandwidth, m.KernelBandwidth)
	if linalg.BF16Dot() {
		m.DotPeak = dotPeak()
	}
	m.KernelPeak = math.Max(m.SgemmPeak, m.DotPeak)
	return m
}

// streamBytes is the size of the buffers streamed: far beyond any cache.
const streamBytes = 256 << 20

const reps = 21

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

// typical returns the median of reps runs of fn. The median rather than the best: on the 2-core VM the
// same product ran at 100–105 GFLOP/s most of the time and at 150–200 now and then, so the best of a few
// runs swung the bound by 2× from one invocation to the next.
func typical(fn func() time.Duration) time.Duration {
	ds := make([]time.Duration, reps)
	for i := range ds {
		ds[i] = fn()
	}
	return percentile(ds, 50)
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

// dotPeak is linalg.SgemmBF16Infer's rate on a decoding-shaped product: 64 rows of activations times
// 4096 × 1024 bfloat16 weights (8 MiB, streamed from L3 at best), with bfloat16 dot products.
func dotPeak() float64 {
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
