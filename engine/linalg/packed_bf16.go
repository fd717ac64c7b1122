package linalg

import "fmt"

// PackedBF16 is a frozen bfloat16 matrix W [n × k] (a base model's weight in PyTorch's layout, out × in) laid
// out once for the blocked kernel's products x·Wᵀ. For each block of k-steps the driver will take (kc of them,
// split as the driver splits k), it holds ⌈n/nr⌉ panels of kc groups of nr values (nr consecutive rows of W,
// zero past n): exactly the packed op(B) the kernel reads, in half the bytes. A product then widens each
// panel it needs in one contiguous pass. Without it, every product widened W's rows into scratch and
// transposed them into panels again (a scalar loop on AVX2: 17% of a training step), although the weights
// never change; decoding a batch took the register tiles, which widen every value once per 3 rows of A.
type PackedBF16 struct {
	n, k   int
	nr, kc int
	data   []uint16
}

// PackBF16 lays out the n × k bfloat16 matrix w (row stride ldw) for SgemmPackedBF16.
func PackBF16(n, k int, w []uint16, ldw int) *PackedBF16 {
	if n < 0 || k < 0 || ldw < max(k, 1) || (n > 0 && k > 0 && len(w) < (n-1)*ldw+k) {
		panic(fmt.Sprintf("linalg.PackBF16: %d values with stride %d cannot hold %d×%d", len(w), ldw, n, k))
	}
	kern := kernelFor(n)
	p := &PackedBF16{n: n, k: k, nr: kern.nr, kc: kern.kc(max(k, 1))}
	p.data = make([]uint16, PackedBF16Bytes(n, k)/2)
	panels := (n + p.nr - 1) / p.nr
	workers, release := acquireWorkers(n, k, 1)
	defer release()
	// One unit per panel and k block: each reads nr rows of W over kc steps and writes one contiguous panel.
	blocks := (k + p.kc - 1) / p.kc
	parallelFor(workers, blocks*panels, func(_, u int) {
		p0, jp := u/panels*p.kc, u%panels
		kcur := min(p.kc, k-p0)
		panel := p.panel(p0, jp*p.nr)
		for r := range min(p.nr, n-jp*p.nr) {
			row := w[(jp*p.nr+r)*ldw+p0 : (jp*p.nr+r)*ldw+p0+kcur]
			for pp, v := range row {
				panel[pp*p.nr+r] = v
			}
		}
	})
	return p
}

// Bytes is the memory the packed matrix takes.
func (p *PackedBF16) Bytes() int64 { return int64(len(p.data)) * 2 }

// panel is the stored panel of W's rows j0 .. j0+nr-1 (j0 a multiple of nr) over the block of k-steps that
// starts at p0: kcur groups of nr values.
func (p *PackedBF16) panel(p0, j0 int) []uint16 {
	o := p.offset(p0, j0)
	return p.data[o : o+min(p.kc, p.k-p0)*p.nr]
}

// offset is where panel(p0, j0) starts in p.data: the blocks before p0 (p0 groups of the padded n each),
// then j0 rows' panels of this block's kcur groups.
func (p *PackedBF16) offset(p0, j0 int) int { return p0*roundUp(p.n, p.nr) + j0*min(p.kc, p.k-p0) }

// columnRun is where W's column q starts in the stored panel of W's rows j .. j+nr-1 (j a multiple of nr):
// their nr values, contiguous; and how many values on the same column's values of the next nr rows start
// (the next stored panel of its block of columns), for gathering Wᵀ's panels.
func (p *PackedBF16) columnRun(j, q int) (off, stride int) {
	qb := q / p.kc * p.kc // the stored block of W's columns q is in
	return p.offset(qb, j) + (q-qb)*p.nr, p.nr * min(p.kc, p.k-qb)
}

// at is W[j, q].
func (p *PackedBF16) at(j, q int) uint16 {
	p0 := q / p.kc * p.kc
	return p.panel(p0, j/p.nr*p.nr)[(q-p0)*p.nr+j%p.nr]
}

// SgemmPackedBF16 computes C = alpha·A·Wᵀ + beta·C for the m × k row-major A (stride lda) and the packed n × k
// W, into the m × n C (stride ldc): Sgemm(false, true, ...) with B = W, in float32 throughout (every value
// of W is exact in float32), so the result is Sgemm's on the widened matrix up to summation order.
func SgemmPackedBF16(m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int) {
	SgemmPackedBF16Plus(m, alpha, a, lda, p, beta, c, ldc, nil)
}

// SgemmPackedBF16Plus is SgemmPackedBF16 followed by C += lr's term (LowRank: an adapter's s·u·Bᵀ), added to
// each tile of C as the blocked drivers write it, after the product otherwise; nil lr: none.
func SgemmPackedBF16Plus(m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int,
	lr *LowRank) {
	n, k := p.n, p.k
	if m < 0 {
		panic("linalg.SgemmPackedBF16: negative dimension")
	}
	checkMatrix("A", false, m, k, a, lda)
	checkMatrix("C", false, m, n, c, ldc)
	lr.check(m, n)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleMatrix(m, n, beta, c, ldc)
		lr.Add(m, n, c, ldc)
		return
	}
	kern := kernelFor(n)
	pack := func(dst []float32, p0, kc, j0, cols int) { // any other kernel (a test's, or after SetKernel)
		for pp := range kc {
			d := dst[pp*kern.nr : (pp+1)*kern.nr]
			for j := range cols {
				d[j] = fromBF16(p.at(j0+j, p0+pp))
			}
			clear(d[cols:])
		}
	}
	if kern.nr == p.nr && kern.kc(k) == p.kc {
		// The driver's panels are the stored ones.
		pack = func(dst []float32, p0, kc, j0, _ int) { widenBF16(dst[:kc*p.nr], p.panel(p0, j0)) }
	}
	tiles := panelTilesFor(p.nr)
	if tiles != nil && (m <= panelsMaxRows || (p.nr == 32 && m <= rowGroupsMaxRows)) {
		// A decoding batch streams W from memory and does few multiply-adds per byte: split by the bytes
		// read when that gives more workers.
		workers, release := acquireStreamWorkers(2 * n * k)
		if workers == 1 {
			release()
			workers, release = acquireWorkers(m, n, k)
		}
		low := rowGroupTerm(lr, m, p, tiles)
		sgemmRowGroups(tiles, workers, m, alpha, a, lda, p, beta, c, ldc, low)
		release()
		lr.finish(low, m, n, c, ldc)
		return
	}
	if tiles != nil && p.nr == 32 && n%32 == 0 {
		// A training pass's rows on AVX-512's panels: row groups too, over slices of rowSliceRows rows. The
		// blocked driver packs A and widens W into float32 blocks first, and its tiles read both back; the
		// row groups' tiles read A as it is and widen W's panels in registers. Over 4,096 rows (a
		// SmolLM2-135M training pass; 2 cores of a Zen 5 EPYC, float32 FMAs only) they ran 1,536 × 576
		// at 382–395 GFLOP/s against 336–348, 576 × 1,536 at 384–385 against 348–351, 576 × 576 at 379–385
		// against 366–369. Their sums are the blocked driver's, bit for bit, where every panel is whole: both
		// sum each block of the stored panels' kc steps in order from zero and add alpha·sums + beta·C
		// (the last panel of a ragged n is summed apart, hence n % 32).
		workers, release := acquireWorkers(m, n, k)
		low := rowGroupTerm(lr, m, p, tiles)
		sgemmRowSlices(tiles, workers, m, alpha, a, lda, p, beta, c, ldc, low)
		release()
		lr.finish(low, m, n, c, ldc)
		return
	}
	workers, release := acquireWorkers(m, n, k)
	var low *lowRankTiles // the term as tiles, for the blocked drivers
	defer func() {
		release() // the workers first: a term added after the product is a product of its own
		lr.finish(low, m, n, c, ldc)
	}()
	switch {
	case rowTilesBF16[6] != nil && kern.mr == 6 && kern.nr == 16 && p.nr == 16 && p.kc == kern.kc(k):
		// AVX2, a training pass's rows: the blocked driver over the stored panels (sgemmBlockedBF16).
		low = lr.tiles(m, n)
		sgemmBlockedBF16(kern, workers, m, alpha, a, lda, p, beta, c, ldc, low)
	case m <= panelsMaxRows:
		sgemmPanels(kern, workers, m, n, k, alpha, a, lda, pack, beta, c, ldc)
	default:
		low = lr.tiles(m, n)
		sgemmBlocked(kern, workers, false, m, n, k, alpha, a, lda, pack, beta, c, ldc, low, nil)
	}
}

// runRowsMax is the most rows of A for which each worker of a product over packed weights takes one
// contiguous run of W's panels (panelRun): W then streams from memory, and a worker whose panels follow one
// another in memory streams them in one run (and the panel its tiles prefetch next is its own). Past it a
// panel's arithmetic hides its fetch, and shorter runs balance the workers.
const runRowsMax = 128

// panelRun is how many consecutive panels of W a worker of a product over m rows of A claims at a time
// (sgemmPairs): one run per worker up to runRowsMax rows; past them runs of at most 16,
// short enough that each of the workers gets spread of them (one claim per panel of an LM head, thousands,
// made the claims' shared counter a tenth of a decoding step).
func panelRun(m, panels, workers, spread int) int {
	if m <= runRowsMax {
		return (panels + workers - 1) / workers
	}
	return max(1, min(16, panels/(spread*workers)))
}

// panelsMaxRows is the most rows of A sgemmPanels takes: a decoding batch.
const panelsMaxRows = 96

// rowSliceRows is how many rows of A each sgemmRowGroups call takes when a product has more than
// rowGroupsMaxRows on AVX-512's panels: 128 ran as fast as 256, or faster (576 × 1,536: 384–385 GFLOP/s
// against 356–362), each worker's panels of W then staying in its L2 across the slice.
const rowSliceRows = 128

// rowGroupTerm lays lr's term out for sgemmRowGroups' tiles (the term's own blocked tiles, as Sgemm would add
// it over m rows: lr.tiles), or returns nil, the term then added after the product (LowRank.finish): where
// Sgemm would not use those tiles, their panels are not p's, or a group of rows (up to len(tiles) − 1) would
// not fit one of their row panels.
func rowGroupTerm(lr *LowRank, m int, p *PackedBF16, tiles []panelTile) *lowRankTiles {
	if lr == nil || !lr.blocked(m, p.n) || p.n%p.nr != 0 {
		return nil
	}
	if kern := kernelFor(p.n); kern.nr != p.nr || kern.mr < len(tiles)-1 {
		return nil
	}
	return newLowRankTiles(lr, p.n)
}

// rowGroupsMaxRows is the most rows of A sgemmRowGroups takes with AVX-512's 32-wide panels: a prompt of
// 128 tokens at SmolLM2-135M's shape prefills in 0.13–0.14 s that way against 0.20 in the blocked driver
// (2 cores of an AVX-512 Xeon, `enginebench -work infer`). AVX2's training rows take sgemmBlockedBF16.
const rowGroupsMaxRows = 256

// sgemmPanels is the driver for a few rows of A (a decoding batch): per block of k-steps it packs all of A
// once (at most 96 × 256 values, which stay in L2) and hands out B's panels, each widened into a buffer of
// the worker's that stays in L1 while every row panel of A passes over it. B is read once, widened once and
// never written to a shared block: the blocked driver's kc×nc block (768 KiB at k = 576) outgrows the 512 KiB
// L2 of an AVX2 EPYC, so its kernel read B from L3, and a decoding batch has too few rows to pay for that.
func sgemmPanels(kern *microKernel, workers, m, n, k int, alpha float32, a []float32, lda int, packB packBlock,
	beta float32, c []float32, ldc int) {
	mr, nr := kern.mr, kern.nr
	kc := kern.kc(k)
	rowPanels, colPanels := (m+mr-1)/mr, (n+nr-1)/nr
	ap := getScratch(rowPanels * mr * kc)
	defer putScratch(ap)
	bufs := make([]*[]float32, workers)
	for w := range bufs {
		bufs[w] = getScratch(kc * nr)
	}
	defer func() {
		for _, b := range bufs {
			putScratch(b)
		}
	}()
	// Units of several panels, so that claiming one costs little against its work; four per worker at least.
	per := max(1, min(8, colPanels/(4*workers)))
	for p0 := 0; p0 < k; p0 += kc {
		kcur := min(kc, k-p0)
		bcur := beta
		if p0 > 0 {
			bcur = 1
		}
		for ip := range rowPanels {
			kern.packAPanel((*ap)[ip*mr*kcur:(ip+1)*mr*kcur], a, lda, false, ip*mr, min(mr, m-ip*mr), p0, kcur)
		}
		parallelFor(workers, (colPanels+per-1)/per, func(w, u int) {
			bp := (*bufs[w])[:kcur*nr]
			for jp := u * per; jp < min(colPanels, (u+1)*per); jp++ {
				j0 := jp * nr
				cols := min(nr, n-j0)
				packB(bp, p0, kcur, j0, cols)
				for ip := range rowPanels {
					i0 := ip * mr
					kern.tile(kcur, (*ap)[ip*mr*kcur:(ip+1)*mr*kcur], bp, c[i0*ldc+j0:], ldc, alpha, bcur, min(mr, m-i0), cols)
				}
			}
		})
	}
}

// PackedBF16Bytes is the memory PackBF16 takes for an n × k matrix: n padded to a whole panel of the kernel's
// rows, in bfloat16.
func PackedBF16Bytes(n, k int) int64 { return 2 * int64(roundUp(n, kernelFor(n).nr)) * int64(k) }

// panelTilesBF16[m], where the CPU has them (AVX2), multiplies m ≤ 6 rows of A by one 16-wide panel of a
// PackedBF16, widening the panel in registers: C = alpha·A·P + beta·C (beta 0: C is not read).
var panelTilesBF16 [7]func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32)

// panelTile is one of those tiles.
type panelTile = func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32)

// panelTiles512BF16[m], where the CPU has AVX-512, is panelTilesBF16's counterpart for the 32-wide panels of
// the AVX-512 kernel, for m ≤ 11 rows.
var panelTiles512BF16 []panelTile

// panelTilesFor returns the panel tiles for panels nr wide (index: rows), or nil where there are none.
func panelTilesFor(nr int) []panelTile {
	switch {
	case nr == 16 && panelTilesBF16[6] != nil:
		return panelTilesBF16[:]
	case nr == 32 && panelTiles512BF16 != nil:
		return panelTiles512BF16
	}
	return nil
}

// rowSplit is rows of A in groups as even as panel tiles of at most most rows allow (32 rows on AVX2's 6:
// 5,5,5,5,6,6, not 6×5 and 2): a group of 2 does 4 FMAs per widened step, which the widening, not the FMA
// units, then bounds.
type rowSplit struct{ rows, groups int }

func splitRows(rows, most int) rowSplit { return rowSplit{rows, (rows + most - 1) / most} }

// size is group g's rows: the last rows % groups groups take a row more.
func (s rowSplit) size(g int) int {
	if g >= s.groups-s.rows%s.groups {
		return s.rows/s.groups + 1
	}
	return s.rows / s.groups
}

// sgemmRowGroups is SgemmPackedBF16 on AVX2 (and for a few rows on AVX-512): each worker takes a run of
// W's panels and, block of k-steps by block, runs the panel tiles over each panel with the rows of A in
// groups of up to 6 (A's block, m × 256 values at most, stays in L1/L2; each panel block, 6 KiB at k = 576,
// in L1 while the groups pass over it). A run's panels are contiguous within a block, so a worker streams W
// in long sequential runs, and nothing is packed or widened into memory.
//
// With low, its term is added to each whole panel's tile of a group after the last block of the
// contraction: U's rows from low.chunkRow, this call's row 0.
func sgemmRowGroups(tiles []panelTile, workers, m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int,
	low *lowRankTiles) {
	n, k, nr := p.n, p.k, p.nr
	colPanels := (n + nr - 1) / nr
	// Each worker's panels are one sequential stream for the hardware prefetcher (parallelRuns' regions)
	// instead of a new one every few panels: a decoding step's products with SmolLM2-135M's body
	// (BenchmarkDecodeBody/packed; 3 interleaved runs on a Zen 5 EPYC) went 14.9–16.1 → 13.7–14.0 ms at 8
	// rows and 43.4–44.2 → 40.5–41.7 at 32 on AVX2's tiles, 9.6–12.0 → 7.4–9.9 and 26.4–27.2 → 25.0–25.5 on
	// AVX-512's, when each worker took one run of them; runs of an eighth of a worker's share (at most 16
	// panels) let a worker that is done take the rest of a slower one's from its end.
	run := max(1, min(16, colPanels/(8*workers)))
	split := splitRows(m, len(tiles)-1)
	groups, size := split.groups, split.size
	if low != nil {
		low.packGroups(groups, size)
	}
	parallelRuns(workers, colPanels, run, func(_, lo, hi int) {
		// The last panel's tiles, when n is not a multiple of the panel width: accumulated over the blocks,
		// merged once. Only the unit holding that panel needs them (a buffer per unit was a heap allocation
		// per unit and product).
		var edge []float32
		if hi*nr > n {
			edge = make([]float32, m*nr)
		}
		for p0 := 0; p0 < k; p0 += p.kc {
			kcur := min(p.kc, k-p0)
			bcur, acc := beta, float32(1)
			if p0 == 0 {
				acc = 0
			} else {
				bcur = 1
			}
			for jp := lo; jp < hi; jp++ {
				j0 := jp * nr
				panel := &p.panel(p0, j0)[0]
				for g, i0 := 0, 0; g < groups; g++ {
					rows := size(g)
					if j0+nr <= n {
						tiles[rows](kcur, &a[i0*lda+p0], lda, panel, &c[i0*ldc+j0], ldc, alpha, bcur)
						if low != nil && p0+kcur >= k {
							low.groupTile(c, ldc, g, i0, rows, j0)
						}
					} else {
						tiles[rows](kcur, &a[i0*lda+p0], lda, panel, &edge[i0*nr], nr, 1, acc)
					}
					i0 += rows
				}
			}
		}
		if j0 := (hi - 1) * nr; j0+nr > n {
			mergeTile(edge, nr, m, n-j0, alpha, beta, c[j0:], ldc)
		}
	})
}

// sgemmRowSlices is sgemmRowGroups over slices of rowSliceRows rows of A (W's sides whole panels), in one
// parallel call: its items are (slice, panel) pairs, slice after slice, so each worker's region is whole
// slices, whose rows of A stay in its L2 while W's panels stream past, and only the call's end is a join.
// A call of sgemmRowGroups per slice joined the workers 32 times a product at 4,096 rows, each time after
// one of them had finished its last panel alone: in a runtime trace of SmolLM2-135M's RL step on float32
// FMAs (Zen 5) one goroutine ran alone in those calls for 0.34 s of the 7.8 s step. With low, every slice's
// groups of U are packed up front (U's rows from 0), the term added to each group's tile after the
// contraction's last block.
func sgemmRowSlices(tiles []panelTile, workers, m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int,
	low *lowRankTiles) {
	type slice struct{ i0, groups, g0 int } // the slice's first row, its groups, and its first group's index
	n, k, nr := p.n, p.k, p.nr
	var slices []slice
	var sizes []int // every group's rows, slice after slice
	for i0, rows := 0, 0; i0 < m; i0 += rows {
		// A last slice of 1 or 2 rows would go through tiles of that many, which sum a step's pairs in two
		// sets of accumulators (not the blocked driver's order): the slice before takes them.
		rows = min(rowSliceRows, m-i0)
		if m-i0-rows < 3 {
			rows = m - i0
		}
		split := splitRows(rows, len(tiles)-1)
		slices = append(slices, slice{i0, split.groups, len(sizes)})
		for g := range split.groups {
			sizes = append(sizes, split.size(g))
		}
	}
	if low != nil {
		low.packGroups(len(sizes), func(g int) int { return sizes[g] })
	}
	colPanels := n / nr
	run := max(1, min(16, colPanels/(8*workers)))
	parallelRuns(workers, len(slices)*colPanels, run, func(_, lo, hi int) {
		for lo < hi { // the run's panels within one slice at a time
			s := slices[lo/colPanels]
			j0, j1 := lo%colPanels, min(hi-lo/colPanels*colPanels, colPanels)
			lo += j1 - j0
			for p0 := 0; p0 < k; p0 += p.kc {
				kcur := min(p.kc, k-p0)
				bcur := beta
				if p0 > 0 {
					bcur = 1
				}
				for jp := j0; jp < j1; jp++ {
					panel := &p.panel(p0, jp*nr)[0]
					for g, i := s.g0, s.i0; g < s.g0+s.groups; g++ {
						rows := sizes[g]
						tiles[rows](kcur, &a[i*lda+p0], lda, panel, &c[i*ldc+jp*nr], ldc, alpha, bcur)
						if low != nil && p0+kcur >= k {
							low.groupTile(c, ldc, g, i, rows, jp*nr)
						}
						i += rows
					}
				}
			}
		}
	})
}

// PackedReplacesRowMajor reports whether, for an n-row matrix packed on this CPU, SgemmPackedBF16 serves
// every row count at least as fast as SgemmBF16 on the row-major matrix (the few-row panel tiles exist for
// its panel width: AVX2's 16, AVX-512's 32) and no bfloat16 dot products need the row-major layout: then a
// frozen matrix need only be held packed (SgemmPackedBF16N and PackedBF16.Row serve the other uses). On the
// Emerald Rapids Xeon (AVX-512, its VDPBF16PS not used: BF16Pays) the panel tiles decoded SmolLM2-135M at
// 68–70 tokens/s for one sequence and 372–376 for 8, against 48–50 and 281–286 on the row-major copy
// (GemvBF16T through a Team, the register tiles), and without the copy beside them Gemma 3 270M's training
// step runs in 1.43 GB of peak RSS instead of refusing to start (1.43 GiB needed against a 1.40 GiB limit).
func PackedReplacesRowMajor(n int) bool {
	return panelTilesFor(kernelFor(n).nr) != nil && !BF16Dot()
}

// Row widens row i of W into dst[:k] (an embedding lookup on a tied, packed head).
func (p *PackedBF16) Row(i int, dst []float32) {
	if i < 0 || i >= p.n {
		panic(fmt.Sprintf("linalg.PackedBF16.Row: row %d of %d", i, p.n))
	}
	dst = dst[:p.k]
	for q := range dst {
		dst[q] = fromBF16(p.at(i, q))
	}
}

// SgemmPackedBF16N computes C = alpha·A·W + beta·C for the m × n row-major A (stride lda) and the packed n × k
// W, into the m × k C (stride ldc): the input gradient dy·W of a product x·Wᵀ, in float32 throughout. The
// blocked driver gathers its panels of W from the packed layout, once per product.
func SgemmPackedBF16N(m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int) {
	SgemmPackedBF16NPlus(m, alpha, a, lda, p, beta, c, ldc, nil)
}

// SgemmPackedBF16NPlus is SgemmPackedBF16N followed by C += lr's term (LowRank: an adapter's du·A), added to
// each tile of C as the blocked drivers write it; nil lr: none.
func SgemmPackedBF16NPlus(m int, alpha float32, a []float32, lda int, p *PackedBF16, beta float32, c []float32, ldc int,
	lr *LowRank) {
	n, k := p.n, p.k
	if m < 0 {
		panic("linalg.SgemmPackedBF16N: negative dimension")
	}
	checkMatrix("A", false, m, n, a, lda)
	checkMatrix("C", false, m, k, c, ldc)
	lr.check(m, k)
	if m == 0 || k == 0 {
		return
	}
	if n == 0 || alpha == 0 {
		scaleMatrix(m, k, beta, c, ldc)
		lr.Add(m, k, c, ldc)
		return
	}
	kern := kernelFor(k)
	if kc := kern.kc(n); panelTilesFor(32) != nil && kern.nr == 32 && p.nr == 32 && m > panelsMaxRows &&
		n%32 == 0 && k%32 == 0 && p.kc%32 == 0 && kc%32 == 0 {
		// AVX-512, a training pass's rows: Wᵀ laid out as a PackedBF16 of its own, for the row groups.
		sgemmPackedBF16NRows(m, alpha, a, lda, p, kc, beta, c, ldc, lr)
		return
	}
	workers, release := acquireWorkers(m, k, n)
	low := lr.tiles(m, k)
	defer func() {
		release() // the workers first: a term added after the product is a product of its own
		lr.finish(low, m, k, c, ldc)
	}()
	if rowTilesBF16[6] != nil && kern.mr == 6 && kern.nr == 16 && p.nr == 16 && n%16 == 0 && k%16 == 0 && p.kc%16 == 0 && m > panelsMaxRows {
		// AVX2, a training pass's rows: W's panels gathered in bfloat16 for the bfloat16 tiles.
		sgemmBlockedBF16N(kern, workers, m, alpha, a, lda, p, beta, c, ldc, low)
		return
	}
	// op(B) = W: the driver's k-steps are W's rows, its columns W's columns. In the packed layout the rows
	// of one panel are contiguous for each column, so each column of the block is read in runs of nr.
	sgemmBlocked(kern, workers, false, m, k, n, alpha, a, lda, func(dst []float32, p0, kc, j0, cols int) {
		nr := kern.nr
		done := 0              // k-steps gathered in blocks of 16 or 8
		qb := j0 / p.kc * p.kc // the stored block of W's columns j0 is in
		width := min(p.kc, p.k-qb)
		if widenTPanel != nil && nr == 16 && p.nr == 16 && cols == 16 && p0%16 == 0 && j0+16 <= qb+width && kc >= 16 {
			// A whole panel of 16 columns inside one stored block of them, 16 of W's rows (one stored panel) a
			// step; the stored panels of one block follow each other 16·width values apart.
			pairs, stride := kc/16, 16*width
			off := p.offset(qb, p0) + (j0-qb)*16
			_, _ = p.data[off+(pairs-1)*stride+255], dst[pairs*256-1]
			widenTPanel(&dst[0], &p.data[off], pairs, stride)
			done = 16 * pairs
		}
		if widenT8 != nil && p.nr%8 == 0 {
			// Blocks of 8 of W's rows by 8 of its columns, transposed and widened in registers: in a stored
			// panel the 8 rows are contiguous for each column and the columns p.nr values apart. Columns
			// that cross a stored block of contraction values (p.kc) or the block's edge go one at a time.
			for ; done+8 <= kc && (p0+done)%8 == 0; done += 8 {
				j := p0 + done // W's row
				jb := j - j%p.nr
				for c := 0; c < cols; {
					q := j0 + c
					qb := q / p.kc * p.kc
					if c+8 <= cols && q+8 <= qb+p.kc {
						panel := p.panel(qb, jb)[(q-qb)*p.nr+j-jb:]
						_, _ = panel[7*p.nr+7], dst[(done+7)*nr+c+7]
						widenT8(&dst[done*nr+c], nr, &panel[0], p.nr)
						c += 8
						continue
					}
					for t := range 8 {
						dst[(done+t)*nr+c] = fromBF16(p.at(j+t, q))
					}
					c++
				}
			}
		}
		// The rest one value at a time: rows of W not on a multiple of 8 (the driver's blocks of k-steps
		// start where its split puts them) and the last ones.
		for c := range cols {
			q := j0 + c // W's column: its values for the rows of one panel are contiguous
			qb := q / p.kc * p.kc
			for pp := done; pp < kc; {
				j := p0 + pp
				run := min(p.nr-j%p.nr, kc-pp)
				for t, v := range p.panel(qb, j-j%p.nr)[(q-qb)*p.nr+j%p.nr:][:run] {
					dst[(pp+t)*nr+c] = fromBF16(v)
				}
				pp += run
			}
		}
		for pp := range kc {
			clear(dst[pp*nr+cols : (pp+1)*nr])
		}
	}, beta, c, ldc, low, nil)
}

// transposedChunkBytes bounds the transposed panels sgemmPackedBF16NRows gathers at once: every matrix of a
// layer at SmolLM2-135M's and Qwen2.5-0.5B's widths in one piece, an LM head (50,000 to 260,000 of W's rows)
// in pieces of a few blocks that stay in L2 and L3 between their gathering and their product, where all of
// it would be its whole size again (56 MB at SmolLM2-135M's vocabulary) for every chunk of the head's rows.
const transposedChunkBytes = 2 << 20

// sgemmPackedBF16NRows is SgemmPackedBF16NPlus on AVX-512's 32-wide panels for a training pass's rows: it
// gathers Wᵀ from the stored panels into a PackedBF16 of its own (gatherTPanel32BF16AVX2: 32 × 32 blocks of
// 16-bit values transposed), a piece of whole blocks of kc of W's rows at a time, and runs SgemmPackedBF16Plus
// over each piece, whose row groups' tiles read dy where it is and widen the panels in registers. The blocked
// driver it replaces packed dy into 14-row panels, widened W's blocks into float32 eight values by eight
// (widenT8x8BF16AVX2, called from Go) and read both back: at SmolLM2-135M's shapes (2 cores of a Zen 5 EPYC,
// float32 FMAs only) dy·W ran 5–10% slower than x·Wᵀ at 4,096 rows, and the LM head's 256-row chunks at 241
// GFLOP/s against x·Wᵀ's 359. kc is the blocked driver's split of the contraction, and the pieces start on
// its blocks: the row groups sum each block from zero and add alpha·sums + beta·C as the blocked kernel did,
// so the result is the same bit for bit.
func sgemmPackedBF16NRows(m int, alpha float32, a []float32, lda int, p *PackedBF16, kc int, beta float32, c []float32, ldc int,
	lr *LowRank) {
	const nr = 32
	n, k := p.n, p.k // the contraction (W's rows) and C's columns (W's)
	span := max(1, transposedChunkBytes/(2*k*kc)) * kc
	buf := getBF16Scratch(k * min(span, n))
	defer putBF16Scratch(buf)
	for j0 := 0; j0 < n; j0 += span {
		rows := min(span, n-j0)
		t := &PackedBF16{n: k, k: rows, nr: nr, kc: kc, data: (*buf)[:k*rows]}
		blocks, panels := (rows+kc-1)/kc, k/nr
		workers, release := acquireWorkers(m, k, rows)
		parallelFor(workers, blocks*panels, func(_, u int) {
			p0, q0 := u/panels*kc, u%panels*nr // t's block (W's rows j0+p0 ...) and panel (W's columns q0 ...)
			kcur := min(kc, rows-p0)
			src, stride := p.columnRun(j0+p0, q0)
			dst, pairs := t.offset(p0, q0), kcur/nr
			_, _ = p.data[src+(pairs-1)*stride+nr*nr-1], t.data[dst+pairs*nr*nr-1]
			gatherTPanel32BF16AVX2(&t.data[dst], &p.data[src], pairs, stride)
		})
		release()
		bcur, term := beta, lr
		if j0 > 0 {
			bcur = 1
		}
		if j0+rows < n {
			term = nil // the term goes with the last piece, after the contraction's last block
		}
		SgemmPackedBF16Plus(m, alpha, a[j0:], lda, t, bcur, c, ldc, term)
	}
}

// widenT8, where the CPU has AVX2, sets dst[t*ldd+c] to the bfloat16 src[c*lds+t] widened, for t, c < 8.
var widenT8 func(dst *float32, ldd int, src *uint16, lds int)

// widenTPanel, where the CPU has AVX2, sets dst[t*16+c] to the bfloat16 src[(t/16)*stride+c*16+t%16]
// widened, for t < 16·pairs and c < 16: 16 columns of W's rows, a stored panel (16 rows) at a time.
var widenTPanel func(dst *float32, src *uint16, pairs, stride int)
