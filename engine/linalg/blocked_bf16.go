package linalg

// rowTilesBF16[r], where the CPU has AVX2 and FMA, multiplies a panel of r ≤ 6 packed rows of A (kc groups of
// 6 values) by one stored 16-wide panel of a PackedBF16 (kc groups of 16 bfloat16 values), widening it in
// registers: C = alpha·Ap·P + beta·C on the top r rows of a 6×16 tile.
var rowTilesBF16 [7]func(kc int, a *float32, b *uint16, c *float32, ldc int, alpha, beta float32)

// sgemmBlockedBF16 is the blocked driver (sgemmBlocked) over W's stored panels, for a training pass's rows
// on AVX2 (kern is the 6×16 avx2Kernel, whose packing of A it uses): per block of kc k-steps it packs every
// row panel of A once, then the workers take (row panel, column group) units, each running rowTilesBF16
// across a block of up to ncMax of W's rows while the unit's panel of A stays in L1. Nothing of W is widened
// into memory: the blocked driver's float32 copy of each kc × nc block was twice the bytes, written and read
// again. The panel tiles, which this replaces for more than panelsMaxRows rows, read A where it is: they kept
// 384 rows of A in L2 and streamed W's panels past it, re-reading A from L2 for every panel; on a 2-core
// Zen 3 EPYC (512 KiB L2) at 1,147 rows (2 threads, medians of 5, with avx2KCMax's blocks): SmolLM2-135M's
// q and o projections 115 → 125 GFLOP/s, its gate and up 140 → 149, its LM head 119 → 156.
func sgemmBlockedBF16(kern *microKernel, workers, m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int) {
	const mr, nr = 6, 16
	n, k, kc := p.n, p.k, p.kc
	nc := split(n, ncMax, nr)
	rowPanels := (m + mr - 1) / mr
	ap := getScratch(rowPanels * mr * kc)
	defer putScratch(ap)
	for p0 := 0; p0 < k; p0 += kc {
		kcur := min(kc, k-p0)
		bcur := beta
		if p0 > 0 {
			bcur = 1
		}
		block := (*ap)[:rowPanels*mr*kcur]
		parallelFor(workers, rowPanels, func(_, ip int) {
			kern.packAPanel(block[ip*mr*kcur:(ip+1)*mr*kcur], a, lda, false, ip*mr, min(mr, m-ip*mr), p0, kcur)
		})
		for j0 := 0; j0 < n; j0 += nc {
			colPanels := (min(nc, n-j0) + nr - 1) / nr
			groups, perGroup := columnGroups(workers, rowPanels, colPanels)
			parallelFor(workers, rowPanels*groups, func(_, u int) {
				ip, g := u/groups, u%groups
				i0 := ip * mr
				rows := min(mr, m-i0)
				pa := &block[ip*mr*kcur]
				tile := rowTilesBF16[rows]
				for jp := g * perGroup; jp < min(colPanels, (g+1)*perGroup); jp++ {
					jj := j0 + jp*nr
					panel := &p.panel(p0, jj)[0]
					if cols := n - jj; cols < nr {
						// The stored panel is zero past n; C is not: a tile of scratch, merged.
						var t [mr * nr]float32
						tile(kcur, pa, panel, &t[0], nr, 1, 0)
						mergeTile(t[:], nr, rows, cols, alpha, bcur, c[i0*ldc+jj:], ldc)
						continue
					}
					_ = c[(i0+rows-1)*ldc+jj+nr-1]
					tile(kcur, pa, panel, &c[i0*ldc+jj], ldc, alpha, bcur)
				}
			})
		}
	}
}
