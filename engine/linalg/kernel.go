package linalg

// microKernel is a register-blocked inner kernel: it multiplies an mr×kc packed panel of op(A) by a kc×nr
// packed panel of op(B) and writes one mr×nr tile of C. Its panel shapes decide how A and B are packed.
type microKernel struct {
	name   string
	mr, nr int
	// tile computes C = alpha*Ap·Bp + beta*C for the top-left rows×cols (1 ≤ rows ≤ mr, 1 ≤ cols ≤ nr) of one
	// mr×nr tile whose top-left element is c[0]; beta == 0 overwrites C without reading it. ap holds kc
	// groups of mr values, bp kc groups of nr values (padded with zeros past rows and cols).
	tile func(kc int, ap, bp []float32, c []float32, ldc int, alpha, beta float32, rows, cols int)
	// packA, when set, replaces the generic packA for this kernel's mr (the arguments are packA's but mr).
	packA func(dst, a []float32, lda int, transA bool, i0, rows, p0, kc int)
	// packATBlock, when set, packs k-steps [pa, pb) of all rows×kc panels of op(A) = Aᵀ starting at
	// op(A)[0, p0] into dst (panel after panel, each mr·kc floats).
	packATBlock func(dst, a []float32, lda, rows, p0, pa, pb, kc int)
	// packB, when set, replaces the generic packB for this kernel's nr.
	packB func(dst, b []float32, ldb int, transB bool, p0, kc, j0, cols int)
	// kcMax, when set, replaces the package's kcMax: the most k-steps of a block of this kernel's products.
	kcMax int
}

// kc is the k-steps of each block a product of depth k is split into for this kernel (split: as even as the
// limit allows). A kernel's own limit comes with blocks of a multiple of 16 k-steps (but the last): dy·W
// gathers W's stored panels 8 rows at a time only where a block starts on a multiple of 8, and a depth of
// 4,864 split evenly into blocks of 541 would have gathered Qwen2.5-0.5B's gate and up projections one value
// at a time.
func (k *microKernel) kc(depth int) int {
	if k.kcMax > 0 {
		return split(depth, k.kcMax, 16)
	}
	return split(depth, kcMax, 1)
}

// packAPanel packs one mr×kc panel of op(A) starting at (i0, p0) with the kernel's own packing, or the
// generic one.
func (k *microKernel) packAPanel(dst, a []float32, lda int, transA bool, i0, rows, p0, kc int) {
	if k.packA != nil {
		k.packA(dst, a, lda, transA, i0, rows, p0, kc)
		return
	}
	packA(dst, a, lda, transA, i0, rows, p0, kc, k.mr)
}

// genericKernel is the portable 4×4 kernel. The Go compiler spills when more than about a dozen floats are
// live, so the tile is computed as two 4×2 halves of eight accumulators each, rereading the (L1-resident)
// A panel instead of spilling.
var genericKernel = &microKernel{name: "generic", mr: 4, nr: 4, tile: tile4x4}

func tile4x4(kc int, ap, bp []float32, c []float32, ldc int, alpha, beta float32, rows, cols int) {
	if rows < 4 || cols < 4 {
		var t [16]float32
		half4x2(kc, ap, bp, 0, t[:], 4, 1, 0)
		half4x2(kc, ap, bp, 2, t[2:], 4, 1, 0)
		mergeTile(t[:], 4, rows, cols, alpha, beta, c, ldc)
		return
	}
	half4x2(kc, ap, bp, 0, c, ldc, alpha, beta)
	half4x2(kc, ap, bp, 2, c[2:], ldc, alpha, beta)
}

// half4x2 computes columns off and off+1 of a 4×4 tile.
func half4x2(kc int, ap, bp []float32, off int, c []float32, ldc int, alpha, beta float32) {
	var c00, c01, c10, c11, c20, c21, c30, c31 float32
	ap, bp = ap[:4*kc], bp[off:4*kc]
	for len(ap) >= 4 && len(bp) >= 2 {
		b0, b1 := bp[0], bp[1]
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c10 += a1 * b0
		c11 += a1 * b1
		c20 += a2 * b0
		c21 += a2 * b1
		c30 += a3 * b0
		c31 += a3 * b1
		ap = ap[4:]
		if len(bp) < 4 {
			break
		}
		bp = bp[4:]
	}
	store2(c[0:2:2], c00, c01, alpha, beta)
	store2(c[ldc:ldc+2:ldc+2], c10, c11, alpha, beta)
	store2(c[2*ldc:2*ldc+2:2*ldc+2], c20, c21, alpha, beta)
	store2(c[3*ldc:3*ldc+2:3*ldc+2], c30, c31, alpha, beta)
}

func store2(c []float32, v0, v1, alpha, beta float32) {
	if beta == 0 {
		c[0], c[1] = alpha*v0, alpha*v1
		return
	}
	c[0] = alpha*v0 + beta*c[0]
	c[1] = alpha*v1 + beta*c[1]
}
