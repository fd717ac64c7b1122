package linalg

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkRowsBF16 times decoding-step products: m rows of activations times bfloat16 weights stored
// n × k (Bᵀ), at SmolLM2-135M's MLP and head shapes, and reports GFLOP/s.
//
//	go test -run '^$' -bench RowsBF16 ./engine/linalg/
func BenchmarkRowsBF16(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, s := range []struct{ m, n, k int }{{8, 1536, 576}, {32, 1536, 576}, {64, 1536, 576}, {32, 576, 1536}, {32, 151936, 576}} {
		a := randVec(rng, s.m*s.k)
		w := make([]uint16, s.n*s.k)
		RoundBF16(w, randVec(rng, s.n*s.k))
		c := make([]float32, s.m*s.n)
		b.Run(fmt.Sprintf("%dx%dx%d", s.m, s.n, s.k), func(b *testing.B) {
			for b.Loop() {
				SgemmBF16(false, true, s.m, s.n, s.k, 1, a, s.k, w, s.k, 0, c, s.n)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
