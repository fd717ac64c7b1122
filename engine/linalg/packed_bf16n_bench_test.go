package linalg

import (
	"fmt"
	"testing"
)

// BenchmarkPackedBF16N is the input gradient dy·W of a training step's products at SmolLM2-135M's width
// (a micro-batch of 256 rows) through SgemmPackedBF16N — the AVX2 path, and AVX-512's without bfloat16 products — with
// W's blocks gathered from the packed layout by widenT8 ("t8") and one value at a time ("scalar").
func BenchmarkPackedBF16N(b *testing.B) {
	if widenT8 == nil {
		b.Skip("no widenT8 on this CPU")
	}
	defer func(f func(*float32, int, *uint16, int)) { widenT8 = f }(widenT8)
	t8 := widenT8
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
		for _, v := range []string{"t8", "scalar"} {
			b.Run(fmt.Sprintf("%dx%d/%s", sh.out, sh.in, v), func(b *testing.B) {
				widenT8 = t8
				if v == "scalar" {
					widenT8 = nil
				}
				for b.Loop() {
					SgemmPackedBF16N(m, 1, dy, sh.out, p, 0, dx, sh.in)
				}
				b.ReportMetric(2*float64(m*sh.out*sh.in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
