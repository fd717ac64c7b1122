package linalg

// rowTilesBF16[r], where the CPU has AVX2 and FMA, multiplies a panel of r ≤ 6 packed rows of A (kc groups of
// 6 values) by one stored 16-wide panel of a PackedBF16 (kc groups of 16 bfloat16 values), widening it in
// registers: C = alpha·Ap·P + beta·C on the top r rows of a 6×16 tile.
var rowTilesBF16 [7]func(kc int, a *float32, b *uint16, c *float32, ldc int, alpha, beta float32)

// panelsBF16 and panelsPlusBF16, where the CPU has AVX2 and FMA, run panelTilesBF16[6] over n panels side by
// side (panels6x16BF16AVX2), the second adding a low-rank term to each tile it has written, as the blocked
// kernel's tile over the term's packed operands would (panels6x16BF16PlusAVX2): a unit of a training pass's
// product in one call instead of a call from Go per 6 × 16 tile and a second one for the term.
var (
	panelsBF16     func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32, n int)
	panelsPlusBF16 func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32, n, r int, u, v *float32, lowAlpha float32)
)

// sgemmBlockedBF16 is the blocked driver (sgemmBlocked) over W's stored panels, for a training pass's rows
// on AVX2 (kern is the 6×16 avx2Kernel, whose packing of A it uses for a last panel of 1 or 2 rows): per block
// of kc k-steps the workers take (row panel, column group) units, each running the panel tiles across a block
// of up to ncMax of W's rows while the unit's 6 rows of A, read where they are, stay in L1. Nothing of W is
// widened into memory: the blocked driver's float32 copy of each kc × nc block was twice the bytes, written
// and read again. The panel tiles alone, which this replaces for more than panelsMaxRows rows, kept 384 rows
// of A in L2 and streamed W's panels past it, re-reading A from L2 for every panel; on a 2-core Zen 3 EPYC
// (512 KiB L2) at 1,147 rows (2 threads, medians of 5, with avx2KCMax's blocks): SmolLM2-135M's q and o
// projections 115 → 125 GFLOP/s, its gate and up 140 → 149, its LM head 119 → 156. A's row panels were packed
// once per block before the units ran (packA6AVX2, 2.4% of an RL step's CPU, and a copy of A written and read
// back through L2): the panel tiles of 3 to 6 rows sum in the row tiles' order, bit for bit
// (TestAVX2PanelTilesInPlace), and reading A in place took 1,280 rows at 576 × 576 from 153–164 to 175
// GFLOP/s, at 576 × 1,536 from 155–158 to 165–171, 1,536 × 576 166 → 169–173 (2 threads, Zen 3).
func sgemmBlockedBF16(kern *microKernel, workers, m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int,
	low *lowRankTiles) {
	const nr = 16
	n, k, kc := p.n, p.k, p.kc
	nc := split(n, ncMax, nr)
	u := newBF16Units(kern, m, kc, a, lda)
	defer u.release()
	for p0 := 0; p0 < k; p0 += kc {
		kcur := min(kc, k-p0)
		bcur := beta
		if p0 > 0 {
			bcur = 1
		}
		u.packLast(p0, kcur)
		for j0 := 0; j0 < n; j0 += nc {
			colPanels := (min(nc, n-j0) + nr - 1) / nr
			u.run(workers, p0, kcur, j0, n, colPanels, func(jj int) *uint16 { return &p.panel(p0, jj)[0] }, alpha, bcur, c, ldc,
				lastBlock(low, p0+kcur >= k))
		}
	}
}

// sgemmBlockedBF16N is SgemmPackedBF16N on AVX2 (dy·W, the input gradient of x·Wᵀ): sgemmBlockedBF16's units
// over panels of W gathered, per block of kc of W's rows and ncMax of its columns, from the stored ones
// (gatherTPanelBF16AVX2) in bfloat16. The float32 panels the blocked driver gathered before (widened) were
// twice the bytes, and each tile's 36 KiB of one did not stay in L1 beside its panel of A: at 1,280 rows of
// SmolLM2-135M's shapes on a 2-core Zen 3 EPYC (interleaved runs) 141–146 → 147–149 GFLOP/s at 576 × 576,
// 137–146 → 148–151 at 576 × 1,536, level with x·Wᵀ on the stored panels measured beside it.
// W's rows and columns must be whole panels of 16 (every model's are).
func sgemmBlockedBF16N(kern *microKernel, workers, m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int,
	low *lowRankTiles) {
	const nr = 16
	K, n := p.n, p.k // the product's depth (W's rows) and C's columns (W's)
	kc := kern.kc(K)
	nc := split(n, ncMax, nr)
	u := newBF16Units(kern, m, kc, a, lda)
	defer u.release()
	block := getBF16Scratch(kc * nc)
	defer putBF16Scratch(block)
	for p0 := 0; p0 < K; p0 += kc {
		kcur := min(kc, K-p0)
		bcur := beta
		if p0 > 0 {
			bcur = 1
		}
		u.packLast(p0, kcur)
		for j0 := 0; j0 < n; j0 += nc {
			colPanels := min(nc, n-j0) / nr
			b := (*block)[:colPanels*kcur*nr]
			parallelFor(workers, colPanels, func(_, it int) {
				off, stride := p.columnRun(p0, j0+it*nr) // W's column j0+it·nr is C's
				_, _ = p.data[off+(kcur/16-1)*stride+255], b[(it+1)*kcur*nr-1]
				gatherTPanelBF16AVX2(&b[it*kcur*nr], &p.data[off], kcur/16, stride)
			})
			u.run(workers, p0, kcur, j0, n, colPanels, func(jj int) *uint16 { return &b[(jj-j0)*kcur] }, alpha, bcur, c, ldc,
				lastBlock(low, p0+kcur >= K))
		}
	}
}

// bf16Units are the (row panel, column group) units of sgemmBlockedBF16 and sgemmBlockedBF16N over a
// row-major A of m rows: row panels of 3 to 6 rows are read where they are, by the panel tiles; only a last
// one of 1 or 2 rows, whose panel tile sums in another order (two sets of accumulators), is packed (with
// kern's packing) for a row tile.
type bf16Units struct {
	kern     *microKernel
	m        int
	a        []float32
	lda      int
	lastRows int
	last     *[]float32 // the packed last panel, when it has fewer than 3 rows
}

func newBF16Units(kern *microKernel, m, kc int, a []float32, lda int) *bf16Units {
	u := &bf16Units{kern: kern, m: m, a: a, lda: lda, lastRows: m - (m-1)/6*6}
	if u.lastRows < 3 {
		u.last = getScratch(6 * kc)
	}
	return u
}

func (u *bf16Units) release() {
	if u.last != nil {
		putScratch(u.last)
	}
}

// packLast packs the last row panel's block of kcur k-steps from p0, when it is packed.
func (u *bf16Units) packLast(p0, kcur int) {
	if u.last != nil {
		u.kern.packAPanel((*u.last)[:6*kcur], u.a, u.lda, false, u.m-u.lastRows, u.lastRows, p0, kcur)
	}
}

// run multiplies the k-steps p0..p0+kcur-1 of every row panel by colPanels panels of the block of columns
// from j0 (panel(jj) is the one of columns jj..jj+15, kcur groups of 16 bfloat16 values) into C (n columns
// in all), the workers taking (row panel, column group) units, each unit's rows in L1 while its panels pass.
// With low, its term is added to each tile after it (in the contraction's last block: lastBlock).
func (u *bf16Units) run(workers, p0, kcur, j0, n, colPanels int, panel func(jj int) *uint16, alpha, beta float32, c []float32, ldc int,
	low *lowRankTiles) {
	const mr, nr = 6, 16
	rowPanels := (u.m + mr - 1) / mr
	groups, perGroup := columnGroups(workers, rowPanels, colPanels)
	parallelFor(workers, rowPanels*groups, func(_, un int) {
		ip, g := un/groups, un%groups
		i0 := ip * mr
		rows := min(mr, u.m-i0)
		tile := panelTilesBF16[rows]
		pa, lda := &u.a[i0*u.lda+p0], u.lda
		if u.last != nil && ip == rowPanels-1 {
			pa, lda = &(*u.last)[0], 0
			row := rowTilesBF16[rows]
			tile = func(k int, a *float32, _ int, b *uint16, c *float32, ldc int, alpha, beta float32) {
				row(k, a, b, c, ldc, alpha, beta)
			}
		}
		jp0, jp1 := g*perGroup, min(colPanels, (g+1)*perGroup)
		if full := min(jp1, (n-j0)/nr); rows == mr && panelsBF16 != nil && full > jp0 {
			// The unit's whole panels in one call; a last one past n below.
			jj := j0 + jp0*nr
			tc := c[i0*ldc+jj : (i0+rows-1)*ldc+j0+full*nr]
			if low != nil {
				low.panels(kcur, pa, lda, panel(jj), tc, ldc, i0, jj, full-jp0, alpha, beta)
			} else {
				panelsBF16(kcur, pa, lda, panel(jj), &tc[0], ldc, alpha, beta, full-jp0)
			}
			jp0 = full
		}
		for jp := jp0; jp < jp1; jp++ {
			jj := j0 + jp*nr
			b := panel(jj)
			if cols := n - jj; cols < nr {
				// The panel is zero past n; C is not: a tile of scratch, merged.
				var t [mr * nr]float32
				tile(kcur, pa, lda, b, &t[0], nr, 1, 0)
				mergeTile(t[:], nr, rows, cols, alpha, beta, c[i0*ldc+jj:], ldc)
				if low != nil {
					low.tile(c, ldc, i0, rows, jj, cols)
				}
			} else {
				_ = c[(i0+rows-1)*ldc+jj+nr-1]
				tile(kcur, pa, lda, b, &c[i0*ldc+jj], ldc, alpha, beta)
				if low != nil {
					low.tile(c, ldc, i0, rows, jj, nr)
				}
			}
		}
	})
}

// panels runs the panel tiles of rows i .. i+5 of the term's chunk (6 rows of A at a, stride lda, times n
// 16-wide bfloat16 panels from b, over kc steps) into C's columns jj .. jj+16n-1 (c from row i's column jj)
// and adds the term to each tile after it. The term's tiles are laid out for the product's kernel (kernelFor
// of the same n), which sgemmBlockedBF16 requires to be AVX2's 6 × 16: panels6x16BF16PlusAVX2's.
func (t *lowRankTiles) panels(kc int, a *float32, lda int, b *uint16, c []float32, ldc, i, jj, n int, alpha, beta float32) {
	r := t.lr.Rank
	up, vp := (*t.up)[i*r:(i+6)*r], (*t.vp)[jj/16*r*16:][:n*r*16]
	panelsPlusBF16(kc, a, lda, b, &c[0], ldc, alpha, beta, n, r, &up[0], &vp[0], t.lr.Alpha)
}

// lastBlock is low in the contraction's last block, nil before it.
func lastBlock(low *lowRankTiles, last bool) *lowRankTiles {
	if last {
		return low
	}
	return nil
}
