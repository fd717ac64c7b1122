package linalg

import (
	"math/rand/v2"
	"testing"
)

// allKernels is the generic kernel plus every assembly kernel this CPU runs.
func allKernels() []*microKernel {
	ks := append(simdKernels(), genericKernel)
	if n := simdNarrowKernel(); n != nil {
		ks = append(ks, n)
	}
	return ks
}

// packedWith returns an Sgemm signature that forces the packed path with the given kernel and worker count.
func packedWith(kern *microKernel, workers int) func(bool, bool, int, int, int, float32, []float32, int,
	[]float32, int, float32, []float32, int) {
	return func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
		beta float32, c []float32, ldc int) {
		sgemmPacked(kern, workers, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// TestPackedKernels drives the packed path of every kernel over shapes around its tile sizes and the cache
// blocks (k past the kernel's kcMax, n past ncMax), with one and three workers.
func TestPackedKernels(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kern := range allKernels() {
		ms := []int{1, kern.mr - 1, kern.mr, kern.mr + 1, 3*kern.mr + 2}
		ns := []int{1, kern.nr - 1, kern.nr, kern.nr + 1, 2*kern.nr + 5}
		ks := []int{1, 2, 3, 4, 5, 9, 64}
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, m := range ms {
					for _, n := range ns {
						k := ks[rng.IntN(len(ks))]
						g := newGemmCase(rng, tA, tB, m, n, k, 1.5, []float32{0, 1, -0.25}[rng.IntN(3)], rng.IntN(2))
						g.check(t, kern.name, packedWith(kern, 1+2*rng.IntN(2)))
					}
				}
				// Several k blocks and n blocks, with a ragged last block of each.
				g := newGemmCase(rng, tA, tB, 2*kern.mr+3, ncMax+kern.nr+3, kern.kc(1<<20)+37, 0.5, 2, 3)
				g.check(t, kern.name, packedWith(kern, 2))
			}
		}
	}
}

// TestKernelsAgree runs one training-sized product through each kernel and checks that they match each other
// as closely as float32 summation order allows.
func TestKernelsAgree(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	g := newGemmCase(rng, false, true, 130, 200, 300, 1, 0, 0)
	var first []float32
	for _, kern := range allKernels() {
		c := append([]float32(nil), g.c...)
		sgemmPacked(kern, 2, g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
		if first == nil {
			first = c
			continue
		}
		for i := range c {
			if d := c[i] - first[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("%s and %s differ at %d: %v vs %v", kern.name, allKernels()[0].name, i, c[i], first[i])
			}
		}
	}
}

// TestGemv covers the matrix-vector paths (m == 1, n == 1 and m ≤ smallRowsMax), including outputs big enough
// to be split across goroutines.
func TestGemv(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, d := range [][3]int{
				{1, 1, 1}, {1, 7, 5}, {1, 300, 129}, {1, 16500, 130}, {9, 1, 33}, {16500, 1, 130}, {3, 70, 40},
				{4, 300, 129}, {4, 4100, 130}, {2, 1100, 1000}, {7, 65, 33}, {16, 200, 77}, {1, 8, 16}, {1, 65, 17},
				{1, 15, 31},
			} {
				g := newGemmCase(rng, tA, tB, d[0], d[1], d[2], -1, []float32{0, 0.5}[rng.IntN(2)], rng.IntN(3))
				g.check(t, "gemv", sgemmGo)
				if d[0] <= 4 {
					g.check(t, "gemvEachRow", gemvEachRow) // the portable few-row path, used off amd64
				}
			}
		}
	}
}

// TestSgemmLarge checks the public entry point on transformer-like shapes large enough to run in parallel.
func TestSgemmLarge(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, d := range [][3]int{{257, 130, 96}, {64, 768, 256}, {300, 65, 520}, {maxBlockRows + 5, 20, 7}} {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			g := newGemmCase(rng, tr[0], tr[1], d[0], d[1], d[2], 1, 0.5, 1)
			g.check(t, "Sgemm", Sgemm)
		}
	}
}

// TestPackA checks each kernel's own A packing against the generic packA, for every edge row count.
func TestPackA(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	for _, kern := range allKernels() {
		if kern.packA == nil {
			continue
		}
		for rows := 1; rows <= kern.mr; rows++ {
			for _, trans := range []bool{false, true} {
				for _, kc := range []int{1, 8, 9, 16, 17, 37, 56} { // around the 8-step chunks of packA6AVX2
					const i0, p0, lda = 3, 5, 61
					a := randSlice(rng, 61*61)
					want := make([]float32, kern.mr*kc)
					got := randSlice(rng, kern.mr*kc)
					packA(want, a, lda, trans, i0, rows, p0, kc, kern.mr)
					kern.packA(got, a, lda, trans, i0, rows, p0, kc)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s rows=%d trans=%v kc=%d: packed[%d] = %v, want %v", kern.name, rows, trans, kc, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestPackB checks each kernel's own B packing against the generic packB, for every edge column count and
// for k lengths around the 16-wide transposed blocks.
func TestPackB(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(25, 26))
	for _, kern := range allKernels() {
		if kern.packB == nil {
			continue
		}
		for cols := 1; cols <= kern.nr; cols++ {
			for _, trans := range []bool{false, true} {
				for _, kc := range []int{1, 15, 16, 37} {
					const p0, j0, ldb = 2, 5, 71
					b := randSlice(rng, 71*71)
					want := make([]float32, kern.nr*kc)
					got := randSlice(rng, kern.nr*kc)
					packB(want, b, ldb, trans, p0, kc, j0, cols, kern.nr)
					kern.packB(got, b, ldb, trans, p0, kc, j0, cols)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s cols=%d trans=%v kc=%d: packed[%d] = %v, want %v", kern.name, cols, trans, kc,
								i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestPackATBlock checks the block packing of a transposed op(A), done in two k-step chunks, against the
// generic packA of each panel.
func TestPackATBlock(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(29, 30))
	for _, kern := range allKernels() {
		if kern.packATBlock == nil {
			continue
		}
		for _, rows := range []int{1, kern.mr - 1, kern.mr, kern.mr + 1, 3*kern.mr + 5} {
			const p0, kc, lda = 3, 37, 70
			a := randSlice(rng, 50*lda)
			panels := (rows + kern.mr - 1) / kern.mr
			got := randSlice(rng, panels*kern.mr*kc)
			kern.packATBlock(got, a, lda, rows, p0, 0, 20, kc)
			kern.packATBlock(got, a, lda, rows, p0, 20, kc, kc)
			want := make([]float32, kern.mr*kc)
			for ip := 0; ip < panels; ip++ {
				packA(want, a, lda, true, ip*kern.mr, min(kern.mr, rows-ip*kern.mr), p0, kc, kern.mr)
				for i, w := range want {
					if g := got[ip*kern.mr*kc+i]; g != w {
						t.Fatalf("%s rows=%d panel %d: packed[%d] = %v, want %v", kern.name, rows, ip, i, g, w)
					}
				}
			}
		}
	}
}

// TestMatVecForms checks the generic and the CPU's matrix-vector forms against each other on odd sizes.
func TestMatVecForms(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 32))
	for _, d := range [][2]int{{1, 1}, {7, 17}, {8, 16}, {13, 33}, {70, 129}} {
		rows, k := d[0], d[1]
		const ld = 140
		mat, x := randSlice(rng, (max(k, rows+3)+1)*ld), randSlice(rng, k)
		got, want := make([]float32, rows), make([]float32, rows)
		rowsDot(got, mat, ld, 3, x)
		rowsDotGeneric(want, mat, ld, 3, x)
		for j := range want {
			if d := got[j] - want[j]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("rowsDot %dx%d: [%d] = %v, generic %v", rows, k, j, got[j], want[j])
			}
		}
		colsAcc(got, mat, ld, 5, x)
		colsAccGeneric(want, mat, ld, 5, x)
		for j := range want {
			if d := got[j] - want[j]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("colsAcc %dx%d: [%d] = %v, generic %v", k, rows, j, got[j], want[j])
			}
		}
	}
}
