package linalg

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Pair products: float32 activations rounded to bfloat16 times bfloat16 weights, float32 sums, with the
// weights in the pair layout that AMX tiles and VDPBF16PS both multiply (for each two contraction values, a
// panel's 32 columns of both interleaved). Where the CPU has AMX tiles (amx_amd64.go) a panel goes through
// amxPanel; where it has avx512_bf16 and no tiles (AMD's Zen 4 and 5, Intel's Cooper Lake) through dotPanel,
// register tiles of VDPBF16PS with twice the multiply-adds of an FMA per instruction. Everything around the
// kernel — rounding A, laying out B, the blocks, workers and the epilogue's contract — is the same.
func init() {
	for i := range 16 { // VPERMT2W's indices: row 2r's value, then row 2r+1's (the second table, from 32)
		pairIndex[2*i], pairIndex[2*i+1] = uint16(i), uint16(32+i)
		pairIndex[32+2*i], pairIndex[32+2*i+1] = uint16(16+i), uint16(48+i)
	}
	for q := range 8 { // pairBlocksNAVX512's VPSHUFB: words 0, 2, 1, 3 of each 64-bit pair
		for i, w := range []byte{0, 2, 1, 3} {
			pairSwap[8*q+2*i], pairSwap[8*q+2*i+1] = byte(8*(q%2))+2*w, byte(8*(q%2))+2*w+1
		}
	}
	hasDot := cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BF16
	if hasDot && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL {
		tilesDot = tilesDotBF16
	}
	switch {
	case amxGranted():
		pairPanel, pairsKernel = amxPanel, "AMX tiles"
		pairTiledA = true
		for i := range amxPeakTiles {
			amxPeakTiles[i] = ToBF16(float32(i%13)*0.25 - 1.5)
		}
		amxPeakLoop = func(iters int) { amxPeak(iters, &amxConfig, &amxPeakTiles[0]) }
	case hasDot:
		pairPanel, pairsKernel = dotPanel, "VDPBF16PS tiles"
	default:
		return
	}
	pairProducts = sgemmPairs
	pairPanelT = panelT
	roundRow = func(rounded []uint16, i int, src []float32) {
		ld := RoundedStride(len(src))
		if pairTiledA { // block i/32 in place, row i%32 of each step's 32 × 32 values
			roundSteps(rounded[i/32*32*ld+i%32*32:], src, 32*32)
			return
		}
		roundSteps(rounded[i*ld:(i+1)*ld], src, 32)
	}
	// The products in bfloat16 are on by default where they pay: AMX's tiles always, VDPBF16PS where it
	// outruns the float32 FMAs on this core (dotOutrunsFMA: AMD's, not Intel's). Elsewhere they stay for
	// SetBF16Train/SetBF16Dot to turn on, and every product goes through the float32 kernels, whose
	// layout Pack then builds.
	bf16Pays = pairsKernel == "AMX tiles" || dotOutrunsFMA()
	bf16Train.Store(bf16Pays)
	bf16Dot.Store(bf16Pays && tilesDot != nil)
}

// heldPanels holds a product's laid-out panels across its chunks of rows (sgemmPairs).
var heldPanels = make(freeList[uint16], 2)

// pairPanel multiplies a call's blocks of rows by its panel: amxPanel on AMX tiles, dotPanel on VDPBF16PS
// register tiles.
var pairPanel func(p *pairCall)

// pairCall is a panel kernel's arguments (amxPanel's and dotPanel's); _asmgen/amx.go and dot.go read its
// fields at fixed offsets. dotPanel reads neither cfg nor scratch.
type pairCall struct {
	cfg      *[64]byte
	a        *uint16  // rows of bfloat16 activations, padded to a multiple of 32 rows and of 32 values
	lda      int      // bytes
	b        *uint16  // the panel: steps groups of 16 pair rows of 32 columns
	steps    int      // of 32 contraction values
	blocks   int      // of 32 rows
	c        *float32 // C's first row and column of the panel
	ldc      int      // bytes
	lastRows int      // rows of C in the last block
	mask     uint64   // C's columns of the panel: bits 0–15 and 16–31
	alpha    float32
	beta     float32 // for every block; 0: C is not read
	scratch  *float32
	stream   uint64 // nonzero: store C with non-temporal stores (beta 0, all 32 columns, 64-byte aligned rows)
}

// amxPeakTiles is what amxPeak multiplies: values that are not zero, as a product's are.
var amxPeakTiles [2048]uint16

// roundedRows is RoundedRows on amd64.
func roundedRows(k int) bool { return pairProducts != nil && k <= pairBlockSteps*32 }

// pairTiledA lays A out for the tile loads (amxPanel): each block's 32 rows of a step's 32 values are 2 KiB
// in a row, the steps of a block one after another, so the tiles read A as a sequential stream.
var pairTiledA bool

// pairIndex is packPairs32AVX512's VPERMT2W indices.
var pairIndex [64]uint16

// pairSwap is pairBlocksNAVX512's VPSHUFB mask (byte indices within each 128-bit lane).
var pairSwap [64]byte

const (
	// pairBlockSteps is the most steps of 32 contraction values one pass multiplies: a panel of 2,048 is
	// 128 KiB and stays in L2 with the rows of A that pass over it; longer contractions (the LM head's
	// input gradient, over the vocabulary) add up blocks.
	pairBlockSteps = 64
	// pairStreamBytes is the size of C from which it is written with non-temporal stores: past a core's L2
	// it would be evicted before anyone reads it, and reading its lines for ownership first doubles the
	// traffic of products that are bandwidth-bound already (an LM head's logits, 19 MB a decoding step of 32
	// rows at Qwen3's vocabulary).
	pairStreamBytes = 2 << 20
)

// pairChunkRows is the most rows of A one pass rounds and multiplies (a variable so that tests can take
// several chunks with fewer rows): 2,048 rows of a 2,048-value block are 8 MiB of bfloat16, read again by
// every panel from L3. Each chunk costs the product a pass over B's panels (from memory, or a transposed
// copy held in L3) and two joins of the workers, and its last chunk is often short: at 512 rows a training
// step's micro-batch of 1,280 rows (SmolLM2-135M) was three chunks and one of 768 (Qwen2.5-0.5B) two. The
// input gradients dy·W took it worst (BenchmarkPairsN, medians of 5 interleaved runs on a Zen 5 EPYC, in
// chunks of 512 rows against one): 623 against 635 GFLOP/s over gate's 1,536 outputs, 695 against 746 over
// down's 576, 646 against 701 over q's and o's, 574 against 684 over k's and v's 192.
var pairChunkRows = 2048

// sgemmPairs computes C = alpha·A·op(B) + beta·C for the m × k row-major float32 A (stride lda) and the
// bfloat16 B: n × k row-major (stride ldb) with op(B) = Bᵀ when transB (x·Wᵀ), k × n when not (dy·W). A is
// rounded to bfloat16 (nearest, ties to even) a block of rows and contraction values at a time; B goes into
// the pair layout one panel of 32 columns at a time, by the worker that multiplies it. Sums are float32.
// transB needs k and ldb even (the pairs are 32-bit words of B's rows). With pre the panels come from it,
// and b is not read: as they are stored for x·Wᵀ (transB), or transposed block by block for dy·W, whose
// B is pre's W (k × n: pre's n rows, its k columns).
//
// With lr (LowRank.blocked), its term is added to each panel's columns of a chunk's rows after the last block
// of the contraction, by the worker that wrote them.
//
// With split, pre's parts' columns go to their own matrices (pairProducts); each starts on a panel.
func sgemmPairs(transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, pre *PackedPairs,
	beta float32, c []float32, ldc int, rounded []uint16, lr *LowRank, split [][]float32) {
	steps := (k + 31) / 32
	nb := (steps + pairBlockSteps - 1) / pairBlockSteps
	blockSteps := (steps + nb - 1) / nb
	chunk := min(roundUp(m, 32), pairChunkRows)
	panels := (n + 31) / 32
	var a16 *[]uint16 // A's rows rounded, a chunk at a time, unless the caller rounded them
	if rounded == nil {
		a16 = scratch16.get(chunk * blockSteps * 32)
		defer scratch16.put(a16)
	}
	// Fewer rows than a tile's (a decoding step of one sequence on weights held only in the pair layout) do
	// little arithmetic per byte of the weights: they are split by those bytes, as other streaming products
	// are, or a matrix-vector product would run at one core's bandwidth.
	var workers int
	var release func()
	if m < pairsMinRows {
		workers, release = acquireStreamWorkers(2 * n * k)
	} else {
		workers, release = acquireWorkers(m, n, k)
	}
	defer release()
	// Workers claim runs of panels (panelRun). With few rows (a decoding batch, a short prompt) the weights
	// stream from memory and each call's tiles prefetch ahead into the panels after theirs (dotPanel,
	// amxPanel), which pays only if the same worker multiplies them next: there each worker claims one
	// contiguous run. Claimed a panel at a time, a layer's 18-panel products alternated panels between the
	// workers, each prefetching the panel the other was already multiplying. (A decoding step's products
	// with SmolLM2-135M's body, BenchmarkDecodeBody/pairs, 4 interleaved runs on a Zen 5 EPYC: 15.3–16.5 ms
	// at 32 rows against 11.5–14.0, 8.1–8.6 against 6.2–8.2 at 8, 24.1–25.2 against 20.3–23.5 at 64.)
	per := panelRun(m, panels, workers, 8)
	// Each worker's panel buffer (unless pre holds the panels) and 32 × 32 block of sums, from the free
	// lists: a decoding step makes hundreds of these products.
	bufs := make([]*[]uint16, workers)
	outs := make([]*[]float32, workers)
	// Each worker's kernel arguments, filled in for every panel: the kernel is called through a function
	// value, so a pairCall built in the call would be allocated on the heap once per panel (tens of
	// thousands a decoding step).
	calls := make([]pairCall, workers)
	defer func() {
		for w := range workers {
			if bufs[w] != nil {
				scratch16.put(bufs[w])
			}
			if outs[w] != nil {
				putScratch(outs[w])
			}
		}
	}()
	// With more than one chunk of rows, each panel is laid out once per block of the contraction, by the
	// first chunk, into held, and the later chunks multiply it from there: a panel does not depend on the
	// rows. (Laid out again for every chunk, the transposed panels of a backward product, dy·W on weights
	// packed for x·Wᵀ, were W transposed 8 times over 4,096 rows; held, that product at Qwen2.5-0.5B's
	// gate projection, 4,096 × 896 × 4,864, ran at 386 GFLOP/s against 379, the medians of 8 runs each on
	// a Zen 4 EPYC.) held is W's block's size, n × 2,048 values at most.
	var held []uint16
	if m > chunk && !(pre != nil && transB) {
		h := heldPanels.get(panels * blockSteps * 32 * 32)
		defer heldPanels.put(h)
		held = *h
	}
	// work readies worker w's scratch (outs[w], which multiply reads) and returns its panel buffer (nil
	// where held or pre holds the panels).
	work := func(w int) (buf []uint16) {
		if outs[w] == nil {
			outs[w] = getScratch(32 * 32)
		}
		if (pre == nil || !transB) && held == nil && bufs[w] == nil {
			bufs[w] = scratch16.get(blockSteps * 32 * 32)
		}
		if bufs[w] != nil {
			buf = *bufs[w]
		}
		return buf
	}
	// Streaming needs every row of C on a 64-byte boundary, as Go's large allocations are; a low-rank term
	// reads C back right after.
	stream := split == nil && int64(m)*int64(n)*4 >= pairStreamBytes && beta == 0 && k <= blockSteps*32 &&
		(4*ldc)%64 == 0 && uintptr(unsafe.Pointer(&c[0]))%64 == 0 && lr == nil
	// Where panel jp's columns of C are: C (its stride ldc), or with split the part's own matrix, from
	// that part's column.
	dest := func(jp int) ([]float32, int, int) { return c, ldc, jp * 32 }
	if split != nil {
		dest = func(jp int) ([]float32, int, int) {
			j0 := jp * 32
			for i, w := range pre.parts {
				if j0 < w {
					return split[i], w, j0
				}
				j0 -= w
			}
			panic("linalg: a panel past the fused matrices")
		}
	}
	var low *lowRankTiles
	if lr != nil {
		low = newLowRankTiles(lr, n)
		defer low.release()
	}
	// Products x·Wᵀ with pre's panels take a chunk of more than gb blocks of rows in units of one group of
	// rows by one panel, the groups in turn (every panel over a group before the next group), so that the
	// group's rows stay in the cores' L2 while the panels pass over them: a worker claimed a panel and took
	// all the chunk's rows over it, which read A from L3 once per panel. (The input gradients dy·W, whose
	// panels are laid out as the product goes, were no faster so: laid out all at once first, each then read
	// back from L3, dy·W at Qwen2.5-0.5B's gate, 768 × 4,864 by 4,864 × 896, ran 4% slower.)
	gb := 0
	if pre != nil && transB && split == nil {
		gb = groupBlocks(low)
	}
	for p0 := 0; p0 < k; p0 += blockSteps * 32 {
		kcur := min(blockSteps*32, k-p0)
		st := (kcur + 31) / 32
		ld := st * 32 // values of a16 per row
		// Where a row's values go in a16: rows of ld values one after another, or (pairTiledA) a block's
		// rows 32 values apart within each step, the steps 32 rows of 32 values apart.
		rowStride, stepStride := ld, 32
		if pairTiledA {
			rowStride, stepStride = 32, 32*32
		}
		bt := beta
		if p0 > 0 {
			bt = 1
		}
		last := p0+kcur >= k
		for i0 := 0; i0 < m; i0 += chunk {
			rows := min(chunk, m-i0)
			blocks := (rows + 31) / 32
			if low != nil && last {
				low.packRows(i0, rows)
			}
			var as []uint16
			if rounded != nil { // by the caller (SgemmPackedPairsRounded: one block, rows as stored)
				as = rounded[i0*ld : (i0+blocks*32)*ld]
			} else {
				as = (*a16)[:blocks*32*ld]
				parallelFor(workers, blocks, func(_, blk int) {
					for i := blk * 32; i < min(rows, blk*32+32); i++ {
						roundSteps(as[blk*32*ld+i%32*rowStride:], a[(i0+i)*lda+p0:(i0+i)*lda+p0+kcur], stepStride)
					}
				})
			}
			// multiply multiplies the chunk's blocks b0 .. b0+nb-1 of rows by panel jp, laid out in buf, and adds
			// the low-rank term to those rows.
			multiply := func(w, jp int, buf []uint16, b0, nb int) {
				j0 := jp * 32
				cols := min(32, n-j0)
				mask := uint32(1)<<cols - 1
				out := *outs[w]
				r0, r1 := b0*32, min(rows, (b0+nb)*32)
				// lda: a row's stride in bytes (tiled, 64: a step's 16-row half is a tile of 16 rows in a row).
				cp, ldcp, jc := dest(jp)
				calls[w] = pairCall{cfg: &amxConfig, a: &as[b0*32*ld], lda: 2 * rowStride, b: &buf[0], steps: st, blocks: nb,
					c: &cp[(i0+r0)*ldcp+jc], ldc: 4 * ldcp, lastRows: r1 - r0 - (nb-1)*32, mask: uint64(mask),
					alpha: alpha, beta: bt, scratch: &out[0], stream: boolWord(stream && cols == 32)}
				pairPanel(&calls[w])
				if low != nil && last {
					low.addRows(c, ldc, r0, r1, j0, cols)
				}
			}
			panel := func(w, jp int) {
				j0 := jp * 32
				cols := min(32, n-j0)
				mask := uint32(1)<<cols - 1
				buf := work(w)
				if held != nil {
					buf = held[jp*st*32*32:]
				}
				switch {
				case pre != nil && transB:
					buf = pre.panel(jp)[p0/32*16*64:]
				case held != nil && i0 > 0:
					// Laid out by the first chunk.
				case pre != nil:
					// The blocks of pre's panels p0/32 .. p0/32+st-1 at step jp: W's rows p0 .. p0+kcur-1 (zero past
					// its last) over its columns j0 .. j0+31 (zero past its last).
					buf = buf[:st*32*32]
					panelWords := pre.steps * 16 * 64
					pairBlocksNAVX512(&buf[0], &pre.data[p0/32*panelWords+jp*16*64], st, 2*panelWords, &pairSwap[0])
				case transB:
					buf = buf[:st*32*32]
					panelT(buf, b, ldb, j0, cols, p0, kcur)
				default:
					buf = buf[:st*32*32]
					packPairs32AVX512(&buf[0], &b[p0*ldb+j0], kcur, ldb, mask, &pairIndex[0])
					clear(buf[(kcur+1)/2*64:])
				}
				multiply(w, jp, buf, 0, blocks)
			}
			if gb == 0 || blocks <= gb {
				parallelFor(workers, (panels+per-1)/per, func(w, u int) {
					for jp := u * per; jp < min(panels, u*per+per); jp++ {
						panel(w, jp)
					}
				})
				continue
			}
			groups := (blocks + gb - 1) / gb
			parallelFor(workers, groups*panels, func(w, u int) {
				work(w)
				g, jp := u/panels, u%panels
				multiply(w, jp, pre.panel(jp)[p0/32*16*64:], g*gb, min(gb, blocks-g*gb))
			})
		}
	}
}

// pairGroupRows is about how many rows of A a group of sgemmPairs' products in groups takes (0: none, for
// BenchmarkPairsGroups): 256 rows of a 1,536-value contraction are 768 KiB of bfloat16, within a core's L2
// beside a panel.
var pairGroupRows = 256

// groupBlocks is the blocks of 32 rows in a group of rows of the grouped products: pairGroupRows, or with a
// low-rank term the nearest multiple of its kernel's rows and of 32 (the term's tiles then start where they
// start when it is added to all of a chunk's rows at once, and their sums are the same).
func groupBlocks(low *lowRankTiles) int {
	if pairGroupRows == 0 {
		return 0
	}
	if low == nil {
		return pairGroupRows / 32
	}
	unit := low.kern.mr / gcd(32, low.kern.mr) // blocks in the least common multiple of 32 and mr rows
	return max(1, (pairGroupRows/32+unit/2)/unit) * unit
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// panelT writes the panel of W's rows j0 .. j0+cols-1 over contraction values p0 .. p0+kc-1 (both even) in
// the pair layout: row r holds, for each of the panel's rows j, the 32-bit word of W[j] with values p0+2r
// and p0+2r+1 — the transposed packing of float32 panels, on words. Rows past kc/2 are zero.
func panelT(dst, w []uint16, ldw, j0, cols, p0, kc int) {
	pairs := kc / 2
	_ = w[(j0+cols-1)*ldw+p0+kc-1]
	words := unsafe.Slice((*float32)(unsafe.Pointer(&w[0])), len(w)/2)
	packB32AVX512((*float32)(unsafe.Pointer(&dst[0])), &words[(j0*ldw+p0)/2], pairs, cols, ldw/2, true)
	clear(dst[pairs*64 : (kc+31)/32*32*32])
}

// roundSteps rounds src, one row of A, to bfloat16 into dst: its values of step s (32 contraction values)
// at dst[s*step:], zeros past its end to the end of its last step. step is 32 for a row in one run, 32·32
// for the tiled layout (pairTiledA).
func roundSteps(dst []uint16, src []float32, step int) {
	n16 := len(src) &^ 15
	if n16 > 0 {
		_ = dst[(n16-1)/32*step+(n16-1)%32] // the last value the kernel writes
		roundBF16AVX512(&dst[0], &src[0], n16, 2*step)
	}
	if len(src)%32 == 0 {
		return
	}
	s := n16 &^ 31
	d := dst[s/32*step : s/32*step+32]
	for p := n16 - s; p < 32; p++ {
		if s+p < len(src) {
			d[p] = ToBF16(src[s+p])
		} else {
			d[p] = 0
		}
	}
}

func boolWord(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
