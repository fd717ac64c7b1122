package linalg

// copyGroups6 and copyGroups16, where the CPU has AVX2 (copyGroups6AVX2, copyGroups16AVX2, generated), copy
// n ≥ 1 runs of 6 or 16 values, one every ld values of src, into dst one after another: packA's groups of a
// transposed A and packB's of a row-major B, for the AVX2 kernel.
var copyGroups6, copyGroups16 func(dst, src *float32, n, ld int)

// packA copies the rows×kc block of op(A) starting at (i0, p0) into dst as kc groups of mr values (one column
// of the block per group), zero-filling rows past rows so the kernel can always compute a full tile.
func packA(dst []float32, a []float32, lda int, transA bool, i0, rows, p0, kc, mr int) {
	dst = dst[:kc*mr]
	if transA {
		// op(A)[i, p] = a[p*lda+i]: each group is a contiguous run of a. The AVX2 kernel's whole groups of 6 are
		// copied by copyGroups6: a copy call (memmove) costs more than 24 bytes' copy, and a copy value by value
		// in Go was still 1.2% of an AVX2 training step's CPU with packB's, in the attention's products.
		if rows == 6 && mr == 6 && copyGroups6 != nil && kc > 0 {
			_, _ = dst[6*kc-1], a[(p0+kc-1)*lda+i0+5]
			copyGroups6(&dst[0], &a[p0*lda+i0], kc, lda)
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
		if cols == 16 && nr == 16 && copyGroups16 != nil && kc > 0 { // as packA's groups of 6
			_, _ = dst[16*kc-1], b[(p0+kc-1)*ldb+j0+15]
			copyGroups16(&dst[0], &b[p0*ldb+j0], kc, ldb)
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
