package linalg

// sgemmNaive is the unpacked loop nest: the fallback for tiny products, where packing would cost more than it
// saves. It scales C by beta first (overwriting when beta == 0), then accumulates rank-1 updates row by row
// so the innermost loop runs along contiguous rows of B and C where the layout allows.
func sgemmNaive(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(ci)
		} else if beta != 1 {
			scale(beta, ci)
		}
		if alpha == 0 {
			continue
		}
		if transB {
			// op(B)[p, j] = b[j*ldb+p]: a dot product per output element.
			for j := range ci {
				var s float32
				for p := 0; p < k; p++ {
					s += at(a, lda, transA, i, p) * b[j*ldb+p]
				}
				ci[j] += alpha * s
			}
			continue
		}
		for p := 0; p < k; p++ {
			if v := alpha * at(a, lda, transA, i, p); v != 0 {
				axpy(v, b[p*ldb:p*ldb+n], ci)
			}
		}
	}
}

// at returns op(X)[i, j] of a row-major matrix x with stride ld.
func at(x []float32, ld int, trans bool, i, j int) float32 {
	if trans {
		return x[j*ld+i]
	}
	return x[i*ld+j]
}
