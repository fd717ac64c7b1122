package linalg

import "golang.org/x/sys/cpu"

// Assembly microkernels (kernel_*_amd64.s; AVX2's tile<r>x16AVX2 are generated, in tiles_bf16_amd64.s). They
// trust their arguments: the driver passes kc ≥ 1, packed panels of kc·mr and kc·nr values and a C tile
// whose rows×cols corner (the whole 6×16 for tile6x16AVX2) lies inside c.

//go:noescape
func tile14x32AVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, rows, cols int)

//go:noescape
func packABlockTAVX512(dst, src *float32, steps, rows, lda, kc int)

//go:noescape
func tile14x16AVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, rows, cols int)

//go:noescape
func packA14AVX512(dst, src *float32, kc, rows, lda int, trans bool)

//go:noescape
func packB32AVX512(dst, src *float32, kc, cols, ldb int, trans bool)

// maxGatherStride is the largest row stride the packing gathers handle: their offsets r·ld (r < 16) are
// 32-bit.
const maxGatherStride = (1<<31 - 1) / 16

// avx512Kernel needs AVX-512F and VL; 14×32 fills 28 of the 32 zmm registers with accumulators.
var avx512Kernel = &microKernel{name: "avx512", mr: 14, nr: 32,
	tile: func(kc int, ap, bp []float32, c []float32, ldc int, alpha, beta float32, rows, cols int) {
		_, _, _ = ap[14*kc-1], bp[32*kc-1], c[(rows-1)*ldc+cols-1]
		tile14x32AVX512(kc, &ap[0], &bp[0], &c[0], ldc, alpha, beta, rows, cols)
	},
	packA:       packA14,
	packATBlock: packATBlock14,
	packB: func(dst, b []float32, ldb int, transB bool, p0, kc, j0, cols int) {
		if ldb > maxGatherStride {
			packB(dst, b, ldb, transB, p0, kc, j0, cols, 32)
			return
		}
		_ = dst[32*kc-1]
		first, last := p0*ldb+j0, (p0+kc-1)*ldb+j0+cols-1 // op(B)[p0, j0] and op(B)[p0+kc-1, j0+cols-1]
		if transB {
			first, last = j0*ldb+p0, (j0+cols-1)*ldb+p0+kc-1
		}
		_ = b[last]
		packB32AVX512(&dst[0], &b[first], kc, cols, ldb, transB)
	}}

// packATBlock14 packs the 14-row panels of a transposed op(A) a block at a time for both AVX-512 kernels.
func packATBlock14(dst, a []float32, lda, rows, p0, pa, pb, kc int) {
	panels := (rows + 13) / 14
	_ = dst[panels*14*kc-1]
	_ = a[(p0+pb-1)*lda+rows-1] // op(A)[rows-1, p0+pb-1]
	packABlockTAVX512(&dst[pa*14], &a[(p0+pa)*lda], pb-pa, rows, lda, kc)
}

// packA14 packs 14-row panels of op(A) for both AVX-512 kernels.
func packA14(dst, a []float32, lda int, transA bool, i0, rows, p0, kc int) {
	if lda > maxGatherStride {
		packA(dst, a, lda, transA, i0, rows, p0, kc, 14)
		return
	}
	_ = dst[14*kc-1]
	first, last := i0*lda+p0, (i0+rows-1)*lda+p0+kc-1 // op(A)[i0, p0] and op(A)[i0+rows-1, p0+kc-1]
	if transA {
		first, last = p0*lda+i0, (p0+kc-1)*lda+i0+rows-1
	}
	_ = a[last]
	packA14AVX512(&dst[0], &a[first], kc, rows, lda, transA)
}

// avx512NarrowKernel takes over from avx512Kernel when n ≤ 16 (LoRA factors), where half of a 32-wide tile
// would be padding and every tile an edge tile.
var avx512NarrowKernel = &microKernel{name: "avx512-narrow", mr: 14, nr: 16, packA: packA14, packATBlock: packATBlock14,
	tile: func(kc int, ap, bp []float32, c []float32, ldc int, alpha, beta float32, rows, cols int) {
		_, _, _ = ap[14*kc-1], bp[16*kc-1], c[(rows-1)*ldc+cols-1]
		tile14x16AVX512(kc, &ap[0], &bp[0], &c[0], ldc, alpha, beta, rows, cols)
	}}

// packA6 packs 6-row panels of a row-major op(A) for the AVX2 kernel, 8 k-steps at a time in registers
// (packA6AVX2), the generic loop doing the rest: the last steps, since the assembly writes 2 values past each
// chunk, and short panels.
func packA6(dst, a []float32, lda int, transA bool, i0, rows, p0, kc int) {
	chunks := (kc - 1) / 8 // at least one k-step left after them, so the overrun stays inside dst
	if transA || rows < 6 || chunks == 0 {
		packA(dst, a, lda, transA, i0, rows, p0, kc, 6)
		return
	}
	_, _ = dst[6*kc-1], a[(i0+5)*lda+p0+kc-1]
	packA6AVX2(&dst[0], &a[i0*lda+p0], chunks, lda)
	done := 8 * chunks
	packA(dst[6*done:], a, lda, false, i0, rows, p0+done, kc-done, 6)
}

// avx2KCMax is the AVX2 kernel's longest block of k-steps, and so its PackedBF16 panels' (a product of depth
// k is split as evenly as it allows: 576 is one block at SmolLM2-135M's width, 448 at Qwen2.5-0.5B's). A 6-row
// panel of A is then at most 13.5 KiB, inside a 32 KiB L1 beside the B panel streaming past it; a tile
// reads and writes its rows of C once per block. On a 2-core Zen 3 EPYC, from 256: dy·W at 1,147 × 576 ×
// 576 98 → 134 GFLOP/s, at 1,147 × 1,536 × 576 126 → 143, and x·Wᵀ through sgemmBlockedBF16 at 1,147 × 1,536 ×
// 576 131 → 149, the LM head's 1,147 × 49,152 × 576 144 → 156 (medians of 5, 2 threads).
const avx2KCMax = 576

// avx2Kernel needs AVX2 and FMA; 6×16 fills 12 of the 16 ymm registers with accumulators.
var avx2Kernel = &microKernel{name: "avx2", mr: 6, nr: 16, packA: packA6, packB: packB16, kcMax: avx2KCMax,
	tile: func(kc int, ap, bp []float32, c []float32, ldc int, alpha, beta float32, rows, cols int) {
		_, _ = ap[6*kc-1], bp[16*kc-1]
		if cols < 16 {
			var t [6 * 16]float32
			tile6x16AVX2(kc, &ap[0], &bp[0], &t[0], 16, 1, 0)
			mergeTile(t[:], 16, rows, cols, alpha, beta, c, ldc)
			return
		}
		_ = c[(rows-1)*ldc+15]
		avx2RowTiles[rows](kc, &ap[0], &bp[0], &c[0], ldc, alpha, beta)
	}}

// packB16 is the AVX2 kernel's B packing: a full panel of a transposed B (the attention's Q·Kᵀ, dO·Vᵀ)
// through packBT16AVX2, 8 k-steps at a time; the rest, and a row-major B (copied a group at a time), as the
// generic packB.
func packB16(dst, b []float32, ldb int, transB bool, p0, kc, j0, cols int) {
	if !transB || cols < 16 || kc < 8 {
		packB(dst, b, ldb, transB, p0, kc, j0, cols, 16)
		return
	}
	blocks := kc / 8
	_, _ = dst[16*kc-1], b[(j0+15)*ldb+p0+kc-1]
	packBT16AVX2(&dst[0], &b[j0*ldb+p0], blocks, ldb)
	if done := 8 * blocks; done < kc {
		packB(dst[16*done:], b, ldb, true, p0+done, kc-done, j0, cols, 16)
	}
}

// avx2RowTiles[r] is the AVX2 tile for a panel of A with r ≤ 6 rows of values (tiles_bf16_amd64.s, generated).
var avx2RowTiles = [7]func(kc int, a, b, c *float32, ldc int, alpha, beta float32){
	1: tile1x16AVX2, 2: tile2x16AVX2, 3: tile3x16AVX2, 4: tile4x16AVX2, 5: tile5x16AVX2, 6: tile6x16AVX2}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		rowTilesBF16 = [7]func(kc int, a *float32, b *uint16, c *float32, ldc int, alpha, beta float32){
			1: tile1x16BF16AVX2, 2: tile2x16BF16AVX2, 3: tile3x16BF16AVX2, 4: tile4x16BF16AVX2,
			5: tile5x16BF16AVX2, 6: tile6x16BF16AVX2}
		panelTilesBF16 = [7]func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32){
			1: panel1x16BF16AVX2, 2: panel2x16BF16AVX2, 3: panel3x16BF16AVX2, 4: panel4x16BF16AVX2,
			5: panel5x16BF16AVX2, 6: panel6x16BF16AVX2}
		panelsBF16, panelsPlusBF16 = panels6x16BF16AVX2, panels6x16BF16PlusAVX2
		copyGroups6, copyGroups16 = copyGroups6AVX2, copyGroups16AVX2
	}
	if hasAVX512() && cpu.X86.HasAVX512BW { // the tiles widen with VPUNPCKLWD and VPUNPCKHWD on zmm
		panelTiles512BF16 = []panelTile{nil, panel1x32BF16AVX512, panel2x32BF16AVX512, panel3x32BF16AVX512,
			panel4x32BF16AVX512, panel5x32BF16AVX512, panel6x32BF16AVX512, panel7x32BF16AVX512, panel8x32BF16AVX512,
			panel9x32BF16AVX512, panel10x32BF16AVX512, panel11x32BF16AVX512}
	}
}

// hasAVX512 reports whether the AVX-512 kernels can run: they use AVX-512F instructions and VL encodings.
func hasAVX512() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL }

// simdNarrowKernel returns the kernel for n ≤ 16 on this CPU, or nil.
func simdNarrowKernel() *microKernel {
	if hasAVX512() {
		return avx512NarrowKernel
	}
	return nil
}

// simdKernels lists the assembly kernels this CPU can run, best first.
func simdKernels() []*microKernel {
	var ks []*microKernel
	if hasAVX512() {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return ks
}

//go:noescape
func small4x64NN(k int, a *[4]*float32, aStride int, b *float32, ldb int, c *[4]*float32, alpha, beta float32,
	cols int)

//go:noescape
func small4xNT(k int, a *[4]*float32, b *float32, ldb int, c *float32, ldc int, alpha, beta float32, groups int)

//go:noescape
func gemvCols64AVX512(k int, x, b *float32, ldb int, acc *float32, cols int)

//go:noescape
func gemvRows8AVX512(k int, x, b *float32, ldb int, out *float32, groups int)
