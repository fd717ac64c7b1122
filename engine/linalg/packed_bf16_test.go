package linalg

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

// TestSgemmPackedBF16 checks the packed products against the float64 reference on the widened matrix: n on
// and off the panel width, k in one block, in blocks split evenly (300 → 2×150) and past several, one row
// to past a row panel of every kernel, with strides. With the CPU's kernel on matrices packed for it, and
// with its other kernels and the generic one on matrices packed for the CPU's kernel, so the stored panels
// and the element-wise fallback are both exercised.
func TestSgemmPackedBF16(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	saved := kernel
	defer func() { kernel = saved }()
	for _, tc := range []struct{ m, n, k int }{
		{1, 300, 70}, {2, 17, 16}, {5, 33, 300}, {6, 16, 256}, {7, 1536, 576}, {32, 151, 576}, {14, 40, 257},
		{33, 1000, 900}, {64, 129, 64}, {200, 96, 48}, {3, 1, 5}, {9, 5, 1},
		{4, 40, 64}, {8, 33, 100}, {96, 64, 40}, {23, 70, 33}, {10, 64, 2}, {11, 65, 3}, // every AVX-512 panel tile
		{128, 70, 96}, {256, 33, 40}, {257, 40, 20}, // a prompt through the AVX-512 row groups, and one row past them
		{2, 530, 70}, {3, 600, 100}, // dy·W over blocks of W's rows that start off (265) and on (200) a multiple of 8
		{151, 50, 700}, {98, 1040, 40}, // AVX2's training rows: two k blocks, an edge panel; two n blocks
		{100, 1300, 30},                  // dy·W over three blocks of W's rows, the last shorter
		{131, 1040, 48}, {104, 32, 1056}, // AVX2's dy·W on gathered bf16 panels: 2 blocks of W's rows, last row panels of 5 and 2, 2 column blocks
	} {
		lda, ldw, ldc := tc.k+1, tc.k+3, tc.n+2
		a := randVec(rng, tc.m*lda)
		w16 := make([]uint16, tc.n*ldw)
		RoundBF16(w16, randVec(rng, len(w16)))
		w := make([]float32, len(w16))
		WidenBF16(w, w16)
		c0 := randVec(rng, tc.m*ldc)
		kernel = saved
		native := PackBF16(tc.n, tc.k, w16, ldw)
		kernel = genericKernel
		narrow := PackBF16(tc.n, tc.k, w16, ldw) // 4-wide panels: no few-row tiles for them
		for _, run := range []struct {
			kern *microKernel
			p    *PackedBF16
		}{
			{saved, native},         // the CPU's paths on its own panels
			{genericKernel, narrow}, // sgemmPanels and the blocked driver on the stored panels of another width
			{saved, narrow},         // the element-wise fallback: panels of another kernel's width
		} {
			kern, p := run.kern, run.p
			kernel = kern
			for _, beta := range []float32{0.5, 0} {
				want := refSgemm(false, true, tc.m, tc.n, tc.k, 0.7, a, lda, w, ldw, beta, c0, ldc)
				got := append([]float32(nil), c0...)
				if beta == 0 {
					for i := range got {
						got[i] = float32(math.NaN()) // beta 0 must not read C
					}
				}
				SgemmPackedBF16(tc.m, 0.7, a, lda, p, beta, got, ldc)
				for i := range tc.m {
					for j := range tc.n {
						g, v := float64(got[i*ldc+j]), want[i*tc.n+j]
						if d := math.Abs(g - v); !(d <= 1e-4*(1+math.Abs(v))) {
							t.Fatalf("%+v kernel %s beta %v: c[%d,%d] = %v, want %v", tc, kern.name, beta, i, j, g, v)
						}
					}
				}
				if tc.m*tc.n*tc.k > 4<<20 {
					continue // the float64 reference is slow; the smaller shapes cover the same paths
				}
				// The input gradient dy·W: dy m × n, the result m × k.
				ldy, ldx := tc.n+1, tc.k+2
				dy := randVec(rng, tc.m*ldy)
				x0 := randVec(rng, tc.m*ldx)
				wantN := refSgemm(false, false, tc.m, tc.k, tc.n, 0.7, dy, ldy, w, ldw, beta, x0, ldx)
				gotN := append([]float32(nil), x0...)
				SgemmPackedBF16N(tc.m, 0.7, dy, ldy, p, beta, gotN, ldx)
				for i := range tc.m {
					for j := range tc.k {
						g, v := float64(gotN[i*ldx+j]), wantN[i*tc.k+j]
						if d := math.Abs(g - v); !(d <= 1e-4*(1+math.Abs(v))) {
							t.Fatalf("%+v kernel %s beta %v: (dy·W)[%d,%d] = %v, want %v", tc, kern.name, beta, i, j, g, v)
						}
					}
				}
			}
		}
		row := make([]float32, tc.k)
		for _, i := range []int{0, tc.n / 2, tc.n - 1} {
			native.Row(i, row)
			for q, v := range row {
				if v != w[i*ldw+q] {
					t.Fatalf("%+v: row %d [%d] = %v, want %v", tc, i, q, v, w[i*ldw+q])
				}
			}
		}
	}
}

// BenchmarkPackedBF16 sets the packed product against SgemmBF16 on the row-major weights, on a SmolLM2-135M
// MLP matrix (1536 × 576) for a decoding batch's rows, a training pass's 1,147 and a step's 4,096 tokens.
//
//	go test -run '^$' -bench PackedBF16 ./engine/linalg/
func BenchmarkPackedBF16(b *testing.B) {
	const n, k = 1536, 576
	rng := rand.New(rand.NewSource(1))
	w := make([]uint16, n*k)
	RoundBF16(w, randVec(rng, n*k))
	p := PackBF16(n, k, w, k)
	for _, m := range []int{1, 2, 4, 8, 16, 32, 64, 1147, 4096} {
		a := randVec(rng, m*k)
		c := make([]float32, m*n)
		flops := 2 * float64(m*n*k)
		b.Run(fmt.Sprint("rowmajor/", m), func(b *testing.B) {
			cpu := processCPU()
			for b.Loop() {
				SgemmBF16(false, true, m, n, k, 1, a, k, w, k, 0, c, n)
			}
			reportRates(b, flops, processCPU()-cpu)
		})
		b.Run(fmt.Sprint("packed/", m), func(b *testing.B) {
			cpu := processCPU()
			for b.Loop() {
				SgemmPackedBF16(m, 1, a, k, p, 0, c, n)
			}
			reportRates(b, flops, processCPU()-cpu)
		})
	}
}

// reportRates reports a benchmark's GFLOP/s of wall time and of CPU time: on a shared machine the second
// still says what the kernels do with the cycles they get.
func reportRates(b *testing.B, flops float64, cpu time.Duration) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
}

// TestSgemmPackedBF16Plus: the float32 products over packed weights that add a low-rank term as they write C
// (an adapter's y += s·u·Bᵀ beside x·Wᵀ, dx += du·A beside dy·W) write what the product and then Sgemm's
// term write, bit for bit: through the blocked drivers (training's rows; AVX2's own, under test-avx2), two
// blocks of the contraction, ragged edges, and rows the term is added to after the product.
func TestSgemmPackedBF16Plus(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, tc := range []struct{ m, n, k, r int }{
		{700, 100, 576, 8}, {300, 64, 70, 16}, {257, 40, 600, 8}, {97, 33, 64, 4}, {40, 64, 96, 8}, {5, 48, 32, 8},
		{700, 96, 576, 8}, {1100, 64, 200, 16}, {200, 128, 96, 8}, // whole AVX-512 panels: row groups, in slices past 256 rows
	} {
		for _, backward := range []bool{false, true} {
			p := randPackedBF16(rng, tc.n, tc.k)
			in, out := tc.k, tc.n
			if backward {
				in, out = tc.n, tc.k
			}
			a := randVec(rng, tc.m*in)
			lr := &LowRank{Rank: tc.r, Alpha: 1.25, U: randVec(rng, tc.m*tc.r), LDU: tc.r, V: randVec(rng, out*tc.r), LDV: tc.r, TransV: true}
			if backward {
				lr.LDV, lr.TransV = out, false
			}
			c0 := randVec(rng, tc.m*out)
			c1 := append([]float32(nil), c0...)
			if backward {
				SgemmPackedBF16N(tc.m, 1, a, in, p, 0.5, c0, out)
				SgemmPackedBF16NPlus(tc.m, 1, a, in, p, 0.5, c1, out, lr)
			} else {
				SgemmPackedBF16(tc.m, 1, a, in, p, 0.5, c0, out)
				SgemmPackedBF16Plus(tc.m, 1, a, in, p, 0.5, c1, out, lr)
			}
			Sgemm(false, lr.TransV, tc.m, out, tc.r, lr.Alpha, lr.U, lr.LDU, lr.V, lr.LDV, 1, c0, out)
			for i := range c0 {
				if c1[i] != c0[i] {
					t.Fatalf("%v backward=%v: C[%d,%d] = %v, the product and then Sgemm's term %v", tc, backward, i/out, i%out, c1[i], c0[i])
				}
			}
		}
	}
}

// TestSgemmPackedBF16RowSlices: a product of more rows than rowGroupsMaxRows over whole AVX-512 panels goes
// through the row groups in slices (SgemmPackedBF16Plus); its sums are the blocked driver's over the stored
// panels, which took these rows before, bit for bit, for alpha and beta, contractions of one block or
// several (k past the stored panels' kc), and a last slice of 1 or 2 rows (385 = 3 · 128 + 1, 258).
func TestSgemmPackedBF16RowSlices(t *testing.T) {
	if panelTilesFor(32) == nil {
		t.Skip("no AVX-512 panel tiles on this CPU")
	}
	rng := rand.New(rand.NewSource(12))
	for _, tc := range []struct{ m, n, k int }{{700, 96, 576}, {1100, 64, 200}, {300, 1536, 576}, {4100, 32, 1536}, {385, 64, 96}, {258, 32, 64}} {
		p := randPackedBF16(rng, tc.n, tc.k)
		if p.nr != 32 || tc.m <= rowGroupsMaxRows {
			t.Fatalf("%v: not a product the slices take (panels %d wide)", tc, p.nr)
		}
		a := randVec(rng, tc.m*tc.k)
		for _, beta := range []float32{0, 0.5} {
			c0 := randVec(rng, tc.m*tc.n)
			c1 := append([]float32(nil), c0...)
			SgemmPackedBF16(tc.m, 0.75, a, tc.k, p, beta, c1, tc.n)
			kern := kernelFor(tc.n)
			widen := func(dst []float32, p0, kc, j0, _ int) { widenBF16(dst[:kc*p.nr], p.panel(p0, j0)) }
			sgemmBlocked(kern, 2, false, tc.m, tc.n, tc.k, 0.75, a, tc.k, widen, beta, c0, tc.n, nil, nil)
			for i := range c0 {
				if c1[i] != c0[i] {
					t.Fatalf("%v beta %v: C[%d,%d] = %v, the blocked driver's %v", tc, beta, i/tc.n, i%tc.n, c1[i], c0[i])
				}
			}
		}
	}
}

// TestSgemmPackedBF16NRows: dy·W over whole AVX-512 panels for a training pass's rows goes through Wᵀ gathered
// into panels of its own and the row groups (sgemmPackedBF16NRows); its sums are the blocked driver's, which
// took these rows before, bit for bit: for alpha and beta, contractions of one block of W's rows or several,
// in one gathered piece or several (4,096 and 8,192 of an LM head's rows at 576 columns: pieces of 7 blocks,
// the last one shorter), 256 rows or fewer in one call of the row groups and more in slices, and W's columns
// over several stored blocks (1,536).
func TestSgemmPackedBF16NRows(t *testing.T) {
	if panelTilesFor(32) == nil {
		t.Skip("no AVX-512 panel tiles on this CPU")
	}
	rng := rand.New(rand.NewSource(13))
	for _, tc := range []struct{ m, n, k int }{{700, 96, 576}, {300, 576, 1536}, {256, 4096, 576}, {130, 8192, 64}, {1100, 1536, 576}, {385, 192, 96}} {
		p := randPackedBF16(rng, tc.n, tc.k)
		kern := kernelFor(tc.k)
		if p.nr != 32 || kern.nr != 32 || kern.kc(tc.n)%32 != 0 || p.kc%32 != 0 {
			t.Fatalf("%v: not a product sgemmPackedBF16NRows takes", tc)
		}
		dy := randVec(rng, tc.m*tc.n)
		for _, beta := range []float32{0, 0.5} {
			c0 := randVec(rng, tc.m*tc.k)
			c1 := append([]float32(nil), c0...)
			if beta == 0 {
				for i := range c1 {
					c1[i] = float32(math.NaN()) // beta 0 must not read C
				}
			}
			SgemmPackedBF16N(tc.m, 0.75, dy, tc.n, p, beta, c1, tc.k)
			gather := func(dst []float32, p0, kc, j0, cols int) {
				for pp := range kc {
					for j := range kern.nr {
						dst[pp*kern.nr+j] = 0
						if j < cols {
							dst[pp*kern.nr+j] = fromBF16(p.at(p0+pp, j0+j))
						}
					}
				}
			}
			sgemmBlocked(kern, 2, false, tc.m, tc.k, tc.n, 0.75, dy, tc.n, gather, beta, c0, tc.k, nil, nil)
			for i := range c0 {
				if c1[i] != c0[i] {
					t.Fatalf("%v beta %v: (dy·W)[%d,%d] = %v, the blocked driver's %v", tc, beta, i/tc.k, i%tc.k, c1[i], c0[i])
				}
			}
		}
	}
}

// BenchmarkLowRank is a projection of a training pass at SmolLM2-135M's shape (4,096 rows, 576 × 576) with
// an adapter of rank 8, its term added by Sgemm after the product ("after") or by the product as it writes C
// ("fused"), over the float32 kernels' panels and, where the CPU has them, the pair products. Each iteration
// takes the next of four sets of A, C and U, 80 MB in all, so that C comes from memory as in a pass.
//
//	go test -run XXX -bench LowRank -count 6 ./engine/linalg/
func BenchmarkLowRank(b *testing.B) {
	const m, n, k, r, sets = 4096, 576, 576, 8, 4
	rng := rand.New(rand.NewSource(1))
	w16 := make([]uint16, n*k)
	RoundBF16(w16, randVec(rng, n*k))
	var as, cs [sets][]float32
	var lrs [sets]*LowRank
	for s := range sets {
		as[s], cs[s] = randVec(rng, m*k), make([]float32, m*n)
		lrs[s] = &LowRank{Rank: r, Alpha: 2, U: randVec(rng, m*r), LDU: r, V: randVec(rng, n*r), LDV: r, TransV: true}
	}
	packed, pairs := PackBF16(n, k, w16, k), PackPairs(n, k, w16, k)
	// Each form's product with the term (nil: none).
	type form struct {
		name    string
		product func(a, c []float32, lr *LowRank)
	}
	forms := []form{{"float32", func(a, c []float32, lr *LowRank) { SgemmPackedBF16Plus(m, 1, a, k, packed, 0, c, n, lr) }}}
	if pairs != nil {
		forms = append(forms, form{"pairs", func(a, c []float32, lr *LowRank) {
			SgemmPackedPairsRoundedPlus(m, 1, a, k, nil, pairs, 0, c, n, lr)
		}})
	}
	for _, f := range forms {
		product := f.product
		for _, fused := range []bool{false, true} {
			b.Run(f.name+"/"+map[bool]string{false: "after", true: "fused"}[fused], func(b *testing.B) {
				s := 0
				for b.Loop() {
					a, c, lr := as[s], cs[s], lrs[s]
					s = (s + 1) % sets
					if fused {
						product(a, c, lr)
					} else {
						product(a, c, nil)
						lr.Add(m, n, c, n)
					}
				}
			})
		}
	}
}

// randPackedBF16 packs an n × k matrix of random values rounded to bfloat16 (PackBF16).
func randPackedBF16(rng *rand.Rand, n, k int) *PackedBF16 {
	w16 := make([]uint16, n*k)
	RoundBF16(w16, randVec(rng, len(w16)))
	return PackBF16(n, k, w16, k)
}
