package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func (g gemmCase) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d alpha=%v beta=%v lda=%d ldb=%d ldc=%d",
		g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.beta, g.lda, g.ldb, g.ldc)
}

// TestSgemmShapes checks Sgemm against the float64 reference over odd, unit, block-edge and larger shapes,
// all transposition combinations, several alpha/beta pairs and padded strides.
func TestSgemmShapes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	dims := []int{1, 2, 3, 7, 13, 16, 17, 31, 33, 64, 65}
	scalars := [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0.5}, {2, 0}}
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, m := range dims {
				for _, n := range dims {
					k := dims[rng.IntN(len(dims))]
					s := scalars[rng.IntN(len(scalars))]
					g := newGemmCase(rng, tA, tB, m, n, k, s[0], s[1], rng.IntN(3))
					g.check(t, "Sgemm", Sgemm)
				}
			}
		}
	}
}
