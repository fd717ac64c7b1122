package linalg

import (
	"fmt"
	"testing"
)

// BenchmarkPackedBF16N is the input gradient dy·W of a training step's products at SmolLM2-135M's width
// (a micro-batch of 256 rows) through SgemmPackedBF16N: on AVX2 sgemmBlockedBF16N, on AVX-512 without
// bfloat16 products sgemmPackedBF16NRows.
func BenchmarkPackedBF16N(b *testing.B) {
	for _, sh := range []struct{ out, in int }{{576, 576}, {1536, 576}, {576, 1536}} {
		const m = 256
		w := make([]uint16, sh.out*sh.in)
		for i := range w {
			w[i] = ToBF16(float32(i%5) - 2)
		}
		p := PackBF16(sh.out, sh.in, w, sh.in)
		dy := make([]float32, m*sh.out)
		for i := range dy {
			dy[i] = float32(i%7) - 3
		}
		dx := make([]float32, m*sh.in)
		b.Run(fmt.Sprintf("%dx%d", sh.out, sh.in), func(b *testing.B) {
			for b.Loop() {
				SgemmPackedBF16N(m, 1, dy, sh.out, p, 0, dx, sh.in)
			}
			b.ReportMetric(2*float64(m*sh.out*sh.in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
