package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refSgemm is the float64 reference: the textbook definition with no blocking, used to check every path.
func refSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += float64(at(a, lda, transA, i, p)) * float64(at(b, ldb, transB, p, j))
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c[i*ldc+j])
			}
			out[i*n+j] = v
		}
	}
	return out
}

// gemmCase is one randomly filled Sgemm problem with its operands stored at the given strides.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	lda, ldb, ldc  int
	a, b, c        []float32
}

// newGemmCase fills a problem of the given shape; pad widens every stride beyond the row width, and C is
// seeded with NaN when beta is 0 to prove it is never read.
func newGemmCase(rng *rand.Rand, transA, transB bool, m, n, k int, alpha, beta float32, pad int) gemmCase {
	g := gemmCase{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	g.lda, g.ldb, g.ldc = max(ac, 1)+pad, max(bc, 1)+pad, max(n, 1)+pad
	g.a = randSlice(rng, ar*g.lda)
	g.b = randSlice(rng, br*g.ldb)
	g.c = randSlice(rng, m*g.ldc)
	if beta == 0 {
		for i := range g.c {
			g.c[i] = float32(math.NaN())
		}
	}
	return g
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}

// check runs impl on a copy of C and compares it with the float64 reference, including that the padding
// columns of C beyond n were left untouched.
func (g gemmCase) check(t testing.TB, name string, impl func(transA, transB bool, m, n, k int, alpha float32,
	a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) {
	t.Helper()
	want := refSgemm(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc)
	got := append([]float32(nil), g.c...)
	impl(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, got, g.ldc)
	// float32 accumulation over k terms of magnitude ≤ 1: error grows about linearly with k in the worst case.
	tol := 1e-5 * float64(g.k+4) * (math.Abs(float64(g.alpha)) + 1)
	for i := 0; i < g.m; i++ {
		for j := 0; j < g.ldc; j++ {
			v := got[i*g.ldc+j]
			if j >= g.n {
				orig := g.c[i*g.ldc+j]
				if v != orig && !(math.IsNaN(float64(v)) && math.IsNaN(float64(orig))) {
					t.Fatalf("%s %s: padding C[%d,%d] changed from %v to %v", name, g, i, j, orig, v)
				}
				continue
			}
			w := want[i*g.n+j]
			if d := math.Abs(float64(v) - w); !(d <= tol) {
				t.Fatalf("%s %s: C[%d,%d] = %v, want %v (|diff| %.3g > tol %.3g)", name, g, i, j, v, w, d, tol)
			}
		}
	}
}
