package linalg

// microKernel is a register-blocked inner kernel: it multiplies an mr×kc packed panel of op(A) by a kc×nr
// packed panel of op(B) and writes one mr×nr tile of C. Its panel shapes decide how A and B are packed.
type microKernel struct {
	name   string
	mr, nr int
	// tile computes C = alpha*Ap·Bp + beta*C for one full mr×nr tile whose top-left element is c[0]; beta == 0
	// overwrites C without reading it. ap holds kc groups of mr values, bp kc groups of nr values.
	tile func(kc int, ap, bp []float32, c []float32, ldc int, alpha, beta float32)
	// packA, when set, replaces the generic packA for this kernel's mr (the arguments are packA's but mr).
	packA func(dst, a []float32, lda int, transA bool, i0, rows, p0, kc int)
}

// genericKernel is the portable 4×4 kernel: sixteen scalar accumulators are as many as the Go compiler keeps
// in registers on common targets.
var genericKernel = &microKernel{name: "generic", mr: 4, nr: 4, tile: tile4x4}

func tile4x4(kc int, ap, bp []float32, c []float32, ldc int, alpha, beta float32) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	ap, bp = ap[:4*kc], bp[:4*kc]
	for p := 0; p < kc; p++ {
		a := ap[4*p : 4*p+4 : 4*p+4]
		b := bp[4*p : 4*p+4 : 4*p+4]
		a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	storeRow4(c[0:4:4], c00, c01, c02, c03, alpha, beta)
	storeRow4(c[ldc:ldc+4:ldc+4], c10, c11, c12, c13, alpha, beta)
	storeRow4(c[2*ldc:2*ldc+4:2*ldc+4], c20, c21, c22, c23, alpha, beta)
	storeRow4(c[3*ldc:3*ldc+4:3*ldc+4], c30, c31, c32, c33, alpha, beta)
}

func storeRow4(c []float32, v0, v1, v2, v3, alpha, beta float32) {
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*v0, alpha*v1, alpha*v2, alpha*v3
		return
	}
	c[0] = alpha*v0 + beta*c[0]
	c[1] = alpha*v1 + beta*c[1]
	c[2] = alpha*v2 + beta*c[2]
	c[3] = alpha*v3 + beta*c[3]
}
