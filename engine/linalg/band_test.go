package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSgemmBand: a product of a band's shape (causal attention's: zeros where the band says op(A) has them)
// computes, through every kernel's blocked path with one and two workers and through SgemmBand's own
// dispatch, what Sgemm does bit for bit — every entry of C for the contraction bands, the entries a row
// needs for BandCols — with beta 0, 1 and ½, over the shapes of SmolLM2's attention (a group of 3 heads
// stacked, 64 wide) and ragged ones, a contraction of more than one block among them.
func TestSgemmBand(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	type shape struct{ m, n, k, off, div int }
	for _, kind := range []BandKind{BandCols, BandKEnd, BandKStart} {
		var shapes []shape
		switch kind {
		case BandCols: // scores: m stacked query rows, n keys, k the heads' width
			shapes = []shape{{192, 64, 64, 0, 3}, {192, 128, 64, 64, 3}, {37, 45, 20, 7, 2}, {30, 200, 9, 150, 1}}
		case BandKEnd: // weights times values: m stacked rows, n the width, k keys
			shapes = []shape{{192, 64, 64, 0, 3}, {192, 64, 128, 64, 3}, {37, 19, 45, 7, 2}, {300, 40, 600, 300, 1}}
		case BandKStart: // a key block's gradients: m keys, n the width, k stacked query rows from the block's first
			shapes = []shape{{64, 64, 384, 0, 3}, {64, 64, 192, 0, 3}, {29, 33, 120, 0, 4}, {40, 16, 700, 5, 1}}
		}
		for _, s := range shapes {
			band := Band{Kind: kind, Off: s.off, Div: s.div}
			transA := kind == BandKStart
			a := make([]float32, s.m*s.k)
			for i := range s.m {
				for p := range s.k {
					zero := kind == BandKEnd && p > band.pos(i) || kind == BandKStart && p < s.div*i+s.off
					v := float32(0)
					if !zero {
						v = float32(rng.NormFloat64())
					}
					if transA {
						a[p*s.m+i] = v
					} else {
						a[i*s.k+p] = v
					}
				}
			}
			lda := s.k
			if transA {
				lda = s.m
			}
			b := make([]float32, s.k*s.n)
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			for _, beta := range []float32{0, 1, 0.5} {
				c0 := make([]float32, s.m*s.n)
				for i := range c0 {
					c0[i] = float32(rng.NormFloat64())
				}
				want := append([]float32(nil), c0...)
				Sgemm(transA, false, s.m, s.n, s.k, 0.75, a, lda, b, s.n, beta, want, s.n)
				check := func(name string, run func(c []float32)) {
					t.Helper()
					got := append([]float32(nil), c0...)
					run(got)
					for i := range s.m {
						for j := range s.n {
							if kind == BandCols && j > band.pos(i) {
								continue
							}
							if g, w := got[i*s.n+j], want[i*s.n+j]; math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%s, band %+v, %d×%d×%d, beta %v: C[%d][%d] = %v, Sgemm %v", name, band, s.m, s.n, s.k, beta, i, j, g, w)
							}
						}
					}
				}
				check("SgemmBand", func(c []float32) {
					SgemmBand(transA, false, s.m, s.n, s.k, 0.75, a, lda, b, s.n, beta, c, s.n, band)
				})
				for _, kern := range allKernels() {
					for _, workers := range []int{1, 2} {
						// The whole product through the kernel, against the banded one through it.
						want = append(want[:0], c0...)
						sgemmPacked(kern, workers, transA, false, s.m, s.n, s.k, 0.75, a, lda, b, s.n, beta, want, s.n)
						check(fmt.Sprintf("%s, %d workers", kern.name, workers), func(c []float32) {
							sgemmPackedBand(kern, workers, transA, false, s.m, s.n, s.k, 0.75, a, lda, b, s.n, beta, c, s.n, &band)
						})
					}
				}
			}
		}
	}
}
