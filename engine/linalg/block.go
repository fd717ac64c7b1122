package linalg

import "sync"

// Cache blocking (see README.md): a kc×nc block of packed op(B) is shared by all workers and stays in each
// core's L2 cache (kcMax·ncMax·4 bytes = 1 MiB of the 2 MiB L2), while one worker's packed mr×kc panel of op(A)
// stays in L1 as the kernel sweeps it across the block's nr-wide panels of B.
const (
	kcMax = 256
	ncMax = 1024
)

// A transposed op(A) of up to maxBlockRows rows is packed as one block per k block (at most 4 MiB), in chunks
// of blockAChunk k-steps so that all workers share the packing.
const (
	maxBlockRows = 4096
	blockAChunk  = 32
)

// gemmBuffers is the packing scratch of one Sgemm call, recycled through bufPool.
type gemmBuffers struct {
	b      []float32   // packed kc×nc block of op(B)
	ablock []float32   // all packed panels of a transposed op(A) for one k block
	a      [][]float32 // per worker: one packed mr×kc panel of op(A)
}

var bufPool sync.Pool

func getBuffers(kern *microKernel, workers, kc, nc int) *gemmBuffers {
	g, _ := bufPool.Get().(*gemmBuffers)
	if g == nil {
		g = new(gemmBuffers)
	}
	g.b = grow(g.b, kc*roundUp(nc, kern.nr))
	for len(g.a) < workers {
		g.a = append(g.a, nil)
	}
	for w := range workers {
		g.a[w] = grow(g.a[w], kern.mr*kc)
	}
	return g
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// split divides total into the fewest parts of at most limit and returns the (equal, aligned) part size, so
// that k=300 becomes two blocks of 152 rather than 256+44.
func split(total, limit, align int) int {
	parts := (total + limit - 1) / limit
	return min(roundUp((total+parts-1)/parts, align), limit)
}

// sgemmPacked is the blocked driver: for each kc×nc block of op(B) it packs the block once (in parallel) and
// then lets the workers take (row panel, column group) units, packing the unit's op(A) panel and running the
// microkernel over it. When A is transposed, its panels are instead packed all at once per k block, row by
// row of a (see packABlockTAVX512). C is scaled by beta in the first k block only.
func sgemmPacked(kern *microKernel, workers int, transA, transB bool, m, n, k int, alpha float32, a []float32,
	lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmPackedBand(kern, workers, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
}

// sgemmPackedBand is sgemmPacked leaving out what band (nil: nothing) says the product does not need.
func sgemmPackedBand(kern *microKernel, workers int, transA, transB bool, m, n, k int, alpha float32, a []float32,
	lda int, b []float32, ldb int, beta float32, c []float32, ldc int, band *Band) {
	sgemmBlocked(kern, workers, transA, m, n, k, alpha, a, lda, func(dst []float32, p0, kc, j0, cols int) {
		kern.packBPanel(dst, b, ldb, transB, p0, kc, j0, cols)
	}, beta, c, ldc, nil, band)
}

// packBPanel packs the kc×cols block of op(B) at (p0, j0) with the kernel's own packing, or the generic one.
func (k *microKernel) packBPanel(dst, b []float32, ldb int, transB bool, p0, kc, j0, cols int) {
	if k.packB != nil {
		k.packB(dst, b, ldb, transB, p0, kc, j0, cols)
		return
	}
	packB(dst, b, ldb, transB, p0, kc, j0, cols, k.nr)
}

// packBlock writes the kc×cols block of op(B) starting at (p0, j0) into dst as kc groups of the kernel's nr
// values, zero-filling columns past cols: how the blocked driver reads B, whatever B's storage.
type packBlock func(dst []float32, p0, kc, j0, cols int)

// sgemmBlocked is sgemmPacked with op(B) read through packB, so that B can be stored otherwise than as a
// float32 matrix (bfloat16 weights already laid out in the kernel's panels: see PackedBF16).
//
// With low (its U packed from row 0 for kern), its term is added to each tile of C after the tile's last block
// of the contraction, while the tile is in L1. With band (SgemmBand; not with low), each tile runs over the
// k-steps band leaves it, or not at all.
func sgemmBlocked(kern *microKernel, workers int, transA bool, m, n, k int, alpha float32, a []float32, lda int,
	packB packBlock, beta float32, c []float32, ldc int, low *lowRankTiles, band *Band) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleMatrix(m, n, beta, c, ldc)
		return
	}
	mr, nr := kern.mr, kern.nr
	kc := kern.kc(k)
	nc := split(n, ncMax, nr)
	rowPanels := (m + mr - 1) / mr
	// A transposed op(A) is packed a block at a time alongside B (packATBlock); a row-major one, when op(B)
	// spans several nc blocks or column groups, a block at a time before them, so that each row panel is
	// packed once per k block rather than once per (nc block, column group): the LM head of a training
	// step (n = 151,936, 149 nc blocks) packed its rows of A 149 times, 14% of a LoRA step on AVX2, whose
	// packing is scalar.
	blockA := transA && kern.packATBlock != nil && m <= maxBlockRows
	rowBlockA := !transA && m <= maxBlockRows && (n > ncMax || rowPanels < 4*workers)
	buf := getBuffers(kern, workers, kc, nc)
	defer bufPool.Put(buf)
	if blockA || rowBlockA {
		buf.ablock = grow(buf.ablock, rowPanels*mr*kc)
	}
	for p0 := 0; p0 < k; p0 += kc {
		kcur := min(kc, k-p0)
		bcur := beta
		if p0 > 0 {
			bcur = 1
		}
		if rowBlockA {
			parallelFor(workers, rowPanels, func(_, ip int) {
				dst := buf.ablock[ip*mr*kcur : (ip+1)*mr*kcur]
				kern.packAPanel(dst, a, lda, false, ip*mr, min(mr, m-ip*mr), p0, kcur)
			})
		}
		for j0 := 0; j0 < n; j0 += nc {
			ncur := min(nc, n-j0)
			colPanels := (ncur + nr - 1) / nr
			bp := buf.b
			aChunks := 0 // k-step ranges of the A block, packed alongside B once per k block
			if blockA && j0 == 0 {
				aChunks = (kcur + blockAChunk - 1) / blockAChunk
			}
			parallelFor(workers, colPanels+aChunks, func(_, it int) {
				if it >= colPanels {
					pa := (it - colPanels) * blockAChunk
					kern.packATBlock(buf.ablock, a, lda, m, p0, pa, min(kcur, pa+blockAChunk), kcur)
					return
				}
				packB(bp[it*kcur*nr:], p0, kcur, j0+it*nr, min(nr, ncur-it*nr))
			})
			groups, perGroup := columnGroups(workers, rowPanels, colPanels)
			parallelFor(workers, rowPanels*groups, func(w, u int) {
				ip, g := u/groups, u%groups
				i0 := ip * mr
				rows := min(mr, m-i0)
				var ap []float32
				switch {
				case blockA || rowBlockA:
					ap = buf.ablock[ip*mr*kcur : (ip+1)*mr*kcur]
				default:
					ap = buf.a[w]
					kern.packAPanel(ap, a, lda, transA, i0, rows, p0, kcur)
				}
				for jp := g * perGroup; jp < min(colPanels, (g+1)*perGroup); jp++ {
					jj := j0 + jp*nr
					cols := min(nr, n-jj)
					if band != nil {
						lo, hi, skip := band.steps(i0, rows, jj, p0, kcur)
						switch {
						case skip && band.Kind != BandCols && bcur != 1:
							scaleMatrix(rows, cols, bcur, c[i0*ldc+jj:], ldc) // C = beta·C, as a tile over zeros
						case !skip:
							kern.tile(hi-lo, ap[lo*mr:], bp[jp*kcur*nr+lo*nr:], c[i0*ldc+jj:], ldc, alpha, bcur, rows, cols)
						}
						continue
					}
					kern.tile(kcur, ap, bp[jp*kcur*nr:], c[i0*ldc+jj:], ldc, alpha, bcur, rows, cols)
					if low != nil && p0+kcur >= k {
						low.tile(c, ldc, i0, rows, jj, cols)
					}
				}
			})
		}
	}
}

// columnGroups splits a block's colPanels column panels into groups of perGroup (the last may have fewer) for
// units of (row panel, column group): one group, unless there are few row panels (small m), when the
// columns are split too so that every worker gets several units.
func columnGroups(workers, rowPanels, colPanels int) (groups, perGroup int) {
	groups = 1
	if rowPanels < 4*workers {
		groups = min(colPanels, (4*workers+rowPanels-1)/rowPanels)
	}
	return groups, (colPanels + groups - 1) / groups
}

// mergeTile writes C = alpha*T + beta*C for the rows×cols corner of a computed tile T.
func mergeTile(t []float32, ldt, rows, cols int, alpha, beta float32, c []float32, ldc int) {
	for r := 0; r < rows; r++ {
		tr := t[r*ldt : r*ldt+cols]
		cr := c[r*ldc : r*ldc+cols]
		for j, v := range tr {
			if beta == 0 {
				cr[j] = alpha * v
			} else {
				cr[j] = alpha*v + beta*cr[j]
			}
		}
	}
}

// scaleMatrix computes C = beta*C for an m×n matrix (beta == 0 clears it, ignoring NaNs).
func scaleMatrix(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			scale(beta, row)
		}
	}
}
