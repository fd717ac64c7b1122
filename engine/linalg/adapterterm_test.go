package linalg

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkAdapterTerm is a decoding step's adapter term for one core's 16 rows at rank 8, s·u·Bᵀ added to
// a projection's output with B as an adapter stores it ([out × rank]), as engine/model's seqAdapters takes
// it.
func BenchmarkAdapterTerm(b *testing.B) {
	const rows, r = 16, 8
	rng := rand.New(rand.NewSource(1))
	for _, out := range []int{576, 1536} {
		u, bm, y := randVec(rng, rows*r), randVec(rng, out*r), make([]float32, rows*out)
		b.Run(fmt.Sprintf("out%d", out), func(b *testing.B) {
			for range b.N {
				Sgemm(false, true, rows, out, r, 2, u, r, bm, r, 1, y, out)
			}
		})
	}
}
