package linalg

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// gemmShape is one benchmarked product: op(A) is m×k, op(B) is k×n.
type gemmShape struct {
	name           string
	transA, transB bool
	m, n, k        int
}

// trainingShapes are the products of one training step of a d_model=256, hidden=768 model on 32×128 tokens:
// forward (X·W), the input gradient (dY·Wᵀ) and the weight gradient (Xᵀ·dY), plus the 1024³ reference size.
var trainingShapes = []gemmShape{
	{"fwd_4096x256x768", false, false, 4096, 768, 256},
	{"fwd_4096x768x256", false, false, 4096, 256, 768},
	{"fwdWt_4096x256x768", false, true, 4096, 768, 256},
	{"dX_4096x768x256", false, true, 4096, 256, 768},
	{"dW_256x4096x768", true, false, 256, 768, 4096},
	{"dW_768x4096x256", true, false, 768, 256, 4096},
	{"attn_128x128x64", false, true, 128, 128, 64},
	{"square_1024", false, false, 1024, 1024, 1024},
}

// gemvShapes are the products of sampling one token.
var gemvShapes = []gemmShape{
	{"1x256x768", false, false, 1, 768, 256},
	{"1x768x256", false, false, 1, 256, 768},
	{"1x256x768_Bt", false, true, 1, 768, 256},
	{"1x256x32000_Bt", false, true, 1, 32000, 256},
	{"4x256x768", false, false, 4, 768, 256},
}

func (s gemmShape) operands() (a, b, c []float32, lda, ldb int) {
	rng := rand.New(rand.NewPCG(1, 1))
	lda, ldb = s.k, s.n
	if s.transA {
		lda = s.m
	}
	if s.transB {
		ldb = s.k
	}
	return randSlice(rng, s.m*s.k), randSlice(rng, s.k*s.n), make([]float32, s.m*s.n), lda, ldb
}

// benchGemm reports, for f on each shape, GFLOP/s of wall time (2·m·n·k per call) and GFLOP per CPU-second
// of the process. On a shared machine the wall figure drops with other load while the CPU figure mostly does
// not, so the second is the one to compare between runs; on an idle machine with every worker busy, wall
// GFLOP/s ≈ CPU GFLOP/s × workers.
func benchGemm(b *testing.B, shapes []gemmShape, f func(tA, tB bool, m, n, k int, alpha float32, a []float32,
	lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) {
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			a, bm, c, lda, ldb := s.operands()
			cpu0 := processCPU()
			for b.Loop() {
				f(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n)
			}
			flops := 2 * float64(s.m*s.n*s.k) * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(flops/cpu.Seconds()/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

// BenchmarkSgemm measures the default backend on the training-step shapes.
func BenchmarkSgemm(b *testing.B) {
	b.Run(Backend(), func(b *testing.B) { benchGemm(b, trainingShapes, Sgemm) })
}

// BenchmarkGemv measures the default backend on the sampling shapes.
func BenchmarkGemv(b *testing.B) {
	b.Run(Backend(), func(b *testing.B) { benchGemm(b, gemvShapes, Sgemm) })
}

// BenchmarkKernels measures the packed path of every kernel this CPU runs, single- and multi-threaded, on the
// square reference size, so the kernels can be compared in one run.
func BenchmarkKernels(b *testing.B) {
	sq := []gemmShape{trainingShapes[len(trainingShapes)-1]}
	for _, kern := range allKernels() {
		for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/threads=%d", kern.name, w), func(b *testing.B) { benchGemm(b, sq, packedWith(kern, w)) })
		}
	}
}

// BenchmarkActivations measures Softmax over one attention row and Sigmoid over one MLP activation row,
// against the generic Go versions.
func BenchmarkActivations(b *testing.B) {
	x := randSlice(rand.New(rand.NewPCG(3, 3)), 704)
	y := make([]float32, len(x))
	cases := []struct {
		name string
		f    func()
	}{
		{"Softmax256", func() { copy(y, x[:256]); Softmax(y[:256]) }},
		{"Softmax256/generic", func() {
			copy(y, x[:256])
			s := expSumGeneric(y[:256], y[:256], maxGeneric(y[:256]))
			scaleGeneric(1/s, y[:256])
		}},
		{"Sigmoid704", func() { Sigmoid(y, x) }},
		{"Sigmoid704/generic", func() { sigmoidGeneric(y, x) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
		})
	}
}

// BenchmarkStream measures how fast one core and all cores stream a bfloat16 matrix through the fused
// widen-and-dot kernel (the inner loop of a decoded token), in GB/s: the roofline of batch-1 decoding, which
// reads every weight of the model once per token.
func BenchmarkStream(b *testing.B) {
	const k = 1024
	n := 128 << 20 / (2 * k) // 128 MiB of bfloat16, far beyond the caches
	m := make([]uint16, n*k)
	for i := range m {
		m[i] = ToBF16(float32(i%7) - 3)
	}
	x := randSlice(rand.New(rand.NewPCG(1, 1)), k)
	for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("threads=%d", w), func(b *testing.B) {
			const rows = 256
			for b.Loop() {
				parallelFor(w, n/rows, func(_, ch int) {
					for j := ch * rows; j < (ch+1)*rows; j++ {
						dotBF16(x, m[j*k:(j+1)*k])
					}
				})
			}
			b.ReportMetric(float64(2*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkHandoff measures what handing half of a short product to another goroutine costs, with 30 µs of
// the caller's own work between products as in a decoding step: parallelFor (its helpers, which spin for
// helperSpin after a job; a goroutine started per product, its parked thread woken each time, took 38 µs
// here against 36 on the Zen 4 VM) against a Team's spinning partner (30 µs). ns/op includes the 30 µs.
func BenchmarkHandoff(b *testing.B) {
	work := func() {
		for t := time.Now(); time.Since(t) < 30*time.Microsecond; {
		}
	}
	b.Run("parallelFor", func(b *testing.B) {
		for b.Loop() {
			work()
			parallelFor(2, 2, func(_, _ int) {})
		}
	})
	b.Run("team", func(b *testing.B) {
		t := NewTeam()
		defer t.Close()
		for b.Loop() {
			work()
			t.run(2, func(int) {})
		}
	})
}
