package linalg

// packA copies the rows×kc block of op(A) starting at (i0, p0) into dst as kc groups of mr values (one column
// of the block per group), zero-filling rows past rows so the kernel can always compute a full tile.
func packA(dst []float32, a []float32, lda int, transA bool, i0, rows, p0, kc, mr int) {
	dst = dst[:kc*mr]
	if transA {
		// op(A)[i, p] = a[p*lda+i]: each group is a contiguous run of a. A whole group of the AVX2 kernel's
		// 6 is copied value by value: copy calls memmove, which costs more than 24 bytes' copy (memmove was
		// 5% of an AVX2 training step's CPU, from here and packB, in the attention's and adapters' products).
		if rows == 6 && mr == 6 {
			for p := 0; p < kc; p++ {
				d, x := dst[p*6:p*6+6:p*6+6], a[(p0+p)*lda+i0:(p0+p)*lda+i0+6:(p0+p)*lda+i0+6]
				d[0], d[1], d[2], d[3], d[4], d[5] = x[0], x[1], x[2], x[3], x[4], x[5]
			}
			return
		}
		for p := 0; p < kc; p++ {
			src := a[(p0+p)*lda+i0:]
			d := dst[p*mr : p*mr+mr]
			copy(d, src[:rows])
			clear(d[rows:])
		}
		return
	}
	for r := 0; r < rows; r++ {
		src := a[(i0+r)*lda+p0 : (i0+r)*lda+p0+kc]
		d := dst[r:]
		for p := 0; p < len(src) && p*mr < len(d); p++ { // the second bound lets the compiler drop the check
			d[p*mr] = src[p]
		}
	}
	for r := rows; r < mr; r++ {
		for p := 0; p < kc; p++ {
			dst[p*mr+r] = 0
		}
	}
}

// packB copies the kc×cols block of op(B) starting at (p0, j0) into dst as kc groups of nr values (one row of
// the block per group), zero-filling columns past cols.
func packB(dst []float32, b []float32, ldb int, transB bool, p0, kc, j0, cols, nr int) {
	dst = dst[:kc*nr]
	if !transB {
		if cols == 16 && nr == 16 { // as packA's groups of 6: no memmove call per 64 bytes
			for p := 0; p < kc; p++ {
				d, x := dst[p*16:p*16+16:p*16+16], b[(p0+p)*ldb+j0:(p0+p)*ldb+j0+16:(p0+p)*ldb+j0+16]
				d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
				d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15] = x[8], x[9], x[10], x[11], x[12], x[13], x[14], x[15]
			}
			return
		}
		for p := 0; p < kc; p++ {
			d := dst[p*nr : p*nr+nr]
			copy(d, b[(p0+p)*ldb+j0:(p0+p)*ldb+j0+cols])
			clear(d[cols:])
		}
		return
	}
	// op(B)[p, j] = b[j*ldb+p]: walk each stored row of b contiguously and scatter into the groups.
	for j := 0; j < cols; j++ {
		src := b[(j0+j)*ldb+p0 : (j0+j)*ldb+p0+kc]
		for p, v := range src {
			dst[p*nr+j] = v
		}
	}
	for j := cols; j < nr; j++ {
		for p := 0; p < kc; p++ {
			dst[p*nr+j] = 0
		}
	}
}
