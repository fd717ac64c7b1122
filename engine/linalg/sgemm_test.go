package linalg

import (
	"fmt"
	"math/rand/v2"
	"sync"
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
	// A few rows times Bᵀ with a long k: several sequences decoded at once (fewRows without AVX-512).
	for _, tA := range []bool{false, true} {
		for _, m := range []int{5, 8, 16} {
			for _, n := range []int{1, 17, 300} {
				for _, k := range []int{64, 65, 700} {
					s := scalars[rng.IntN(len(scalars))]
					newGemmCase(rng, tA, true, m, n, k, s[0], s[1], rng.IntN(3)).check(t, "Sgemm", Sgemm)
				}
			}
		}
	}
	// A few rows times Bᵀ with a k shorter than a vector: an adapter's term u·Bᵀ in a decoding step (on
	// AVX-512, B transposed for the few-row kernels).
	for _, tA := range []bool{false, true} {
		for _, m := range []int{5, 9, 16} {
			for _, n := range []int{64, 100, 1536} {
				for _, k := range []int{1, 8, 9, 15} {
					s := scalars[rng.IntN(len(scalars))]
					newGemmCase(rng, tA, true, m, n, k, s[0], s[1], rng.IntN(3)).check(t, "Sgemm", Sgemm)
				}
			}
		}
	}
}

// TestSgemmConcurrent runs parallel-sized products from several goroutines at once (as the engine does for
// attention heads) and then checks every result, so shared state (buffer pools, worker accounting) is
// exercised.
func TestSgemmConcurrent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 24))
	cases := make([]gemmCase, 6)
	results := make([][3][]float32, len(cases))
	for i := range cases {
		cases[i] = newGemmCase(rng, i%2 == 0, i%3 == 0, 200+i, 130, 96, 1, 0.5, i%2) // ≥ 2²¹ multiply-adds: parallel
	}
	var wg sync.WaitGroup
	for i, g := range cases {
		wg.Go(func() {
			for r := range results[i] {
				c := append([]float32(nil), g.c...)
				Sgemm(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
				results[i][r] = c
			}
		})
	}
	wg.Wait()
	for i, g := range cases {
		for _, res := range results[i] {
			g.check(t, "concurrent Sgemm", func(_, _ bool, _, _, _ int, _ float32, _ []float32, _ int, _ []float32,
				_ int, _ float32, c []float32, _ int) {
				copy(c, res)
			})
		}
	}
}
