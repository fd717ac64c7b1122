package linalg

// rowTilesBF16[r], where the CPU has AVX2 and FMA, multiplies a panel of r ≤ 6 packed rows of A (kc groups of
// 6 values) by one stored 16-wide panel of a PackedBF16 (kc groups of 16 bfloat16 values), widening it in
// registers: C = alpha·Ap·P + beta·C on the top r rows of a 6×16 tile.
var rowTilesBF16 [7]func(kc int, a *float32, b *uint16, c *float32, ldc int, alpha, beta float32)

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
func sgemmBlockedBF16(kern *microKernel, workers, m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int) {
	const mr, nr = 6, 16
	n, k, kc := p.n, p.k, p.kc
	nc := split(n, ncMax, nr)
	rowPanels := (m + mr - 1) / mr
	lastRows := m - (rowPanels-1)*mr
	// Row panels of 3 to 6 rows are read where they are, by the panel tiles; only a last one of 1 or 2 rows,
	// whose panel tile sums in another order (two sets of accumulators), is packed for a row tile.
	packLast := lastRows < 3
	ap := getScratch(rowPanels * mr * kc) // only the last panel's part is used
	defer putScratch(ap)
	for p0 := 0; p0 < k; p0 += kc {
		kcur := min(kc, k-p0)
		bcur := beta
		if p0 > 0 {
			bcur = 1
		}
		block := (*ap)[:rowPanels*mr*kcur]
		if packLast {
			ip := rowPanels - 1
			kern.packAPanel(block[ip*mr*kcur:(ip+1)*mr*kcur], a, lda, false, ip*mr, lastRows, p0, kcur)
		}
		for j0 := 0; j0 < n; j0 += nc {
			colPanels := (min(nc, n-j0) + nr - 1) / nr
			groups, perGroup := columnGroups(workers, rowPanels, colPanels)
			parallelFor(workers, rowPanels*groups, func(_, u int) {
				ip, g := u/groups, u%groups
				i0 := ip * mr
				rows := min(mr, m-i0)
				var tile panelTile
				pa, lda := &a[i0*lda+p0], lda
				if packLast && ip == rowPanels-1 {
					pa, lda = &block[ip*mr*kcur], 0
					row := rowTilesBF16[rows]
					tile = func(k int, a *float32, _ int, b *uint16, c *float32, ldc int, alpha, beta float32) {
						row(k, a, b, c, ldc, alpha, beta)
					}
				} else {
					tile = panelTilesBF16[rows]
				}
				for jp := g * perGroup; jp < min(colPanels, (g+1)*perGroup); jp++ {
					jj := j0 + jp*nr
					panel := &p.panel(p0, jj)[0]
					if cols := n - jj; cols < nr {
						// The stored panel is zero past n; C is not: a tile of scratch, merged.
						var t [mr * nr]float32
						tile(kcur, pa, lda, panel, &t[0], nr, 1, 0)
						mergeTile(t[:], nr, rows, cols, alpha, bcur, c[i0*ldc+jj:], ldc)
						continue
					}
					_ = c[(i0+rows-1)*ldc+jj+nr-1]
					tile(kcur, pa, lda, panel, &c[i0*ldc+jj], ldc, alpha, bcur)
				}
			})
		}
	}
}
