package linalg

import "sync"

// smallRowsAVX512 computes products of few rows (smallRowsMax), four rows at a time, with kernels that read
// op(B) from the matrix once per four rows instead of packing it. Rows past m reuse row 0's data and write to
// scratch, so the kernels always compute four.
func smallRowsAVX512(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	if transB && k < 16 && n >= 64 {
		// op(B) = Bᵀ over fewer values than a vector (an adapter's term u·Bᵀ in a decoding step, k its
		// rank): the NT kernel sums each output's k products across the lanes of an accumulator of its own,
		// where the NN kernel broadcasts a value of A against a row of B. B transposed first: 16 rows ×
		// 1,536 × 8 in 9 µs against 23 (BenchmarkAdapterTerm, Zen 4), 3.5% of a rollout phase's CPU.
		buf := rowPool.Get().(*[]float32)
		*buf = grow(*buf, k*n)
		transposeInto(*buf, n, b, ldb, n, k)
		smallRowsAVX512(transA, false, m, n, k, alpha, a, lda, *buf, n, beta, c, ldc)
		rowPool.Put(buf)
		return
	}
	workers, release := acquireWorkers(m, n, k)
	defer release()
	const chunk = smallChunk
	for i0 := 0; i0 < m; i0 += 4 {
		rows := min(4, m-i0)
		var ar [4][]float32 // op(A) rows: contiguous for the NT kernel, strided by lda when transA for NN
		for r := range ar {
			i := i0 + min(r, rows-1)
			if transA {
				ar[r] = a[i:]
			} else {
				ar[r] = a[i*lda:]
			}
		}
		var buf *[]float32
		if transB && transA {
			buf = rowPool.Get().(*[]float32)
			ar = contiguousRows(buf, ar, rows, k, lda)
		}
		if workers == 1 {
			// One worker (a decoding step's attention, one call per sequence and head from the model's
			// own workers) takes every chunk of columns here: handing them to parallelFor made a closure
			// escape, an allocation per four rows — 1.3 million a rollout phase of 32 × 128 tokens, a
			// quarter of a gigabyte of garbage for the collector.
			for j0 := 0; j0 < n; j0 += chunk {
				smallCols(ar, transA, transB, rows, j0, min(n, j0+chunk), k, alpha, lda, b, ldb, beta, c[i0*ldc:], ldc)
			}
		} else {
			parallelFor(workers, (n+chunk-1)/chunk, func(_, ch int) {
				smallCols(ar, transA, transB, rows, ch*chunk, min(n, ch*chunk+chunk), k, alpha, lda, b, ldb, beta, c[i0*ldc:], ldc)
			})
		}
		if buf != nil {
			rowPool.Put(buf)
		}
	}
}

// smallCols computes columns [j0, j1) (at most smallChunk, the width of smallNT's scratch tile) of up to
// four rows of C (c from the first of them) on the kernel that suits op(B).
func smallCols(ar [4][]float32, transA, transB bool, rows, j0, j1, k int, alpha float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	if transB {
		smallNT(ar, rows, j0, j1, k, alpha, b, ldb, beta, c, ldc)
	} else {
		smallNN(ar, transA, rows, j0, j1, k, alpha, lda, b, ldb, beta, c, ldc)
	}
}

// smallChunk is the number of columns of one work unit of the few-row path: a multiple of both kernels' widths.
const smallChunk = 256

var rowPool = sync.Pool{New: func() any { return new([]float32) }}

// contiguousRows copies the rows of op(A) = Aᵀ (columns of a, lda apart) into contiguous rows in *buf.
func contiguousRows(buf *[]float32, ar [4][]float32, rows, k, lda int) [4][]float32 {
	*buf = grow(*buf, 4*k)
	var out [4][]float32
	for r := range out {
		out[r] = (*buf)[r*k : r*k+k]
		if r < rows {
			for p := range out[r] {
				out[r][p] = ar[r][p*lda]
			}
		} else {
			copy(out[r], out[0])
		}
	}
	return out
}

// smallNN computes columns [j0, j1) of up to four rows of C = alpha*op(A)·B + beta*C, 64 columns per call.
func smallNN(ar [4][]float32, transA bool, rows, j0, j1, k int, alpha float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	aStride := 4
	if transA {
		aStride = 4 * lda
	}
	var ap [4]*float32
	for r := range ap {
		ap[r] = &ar[r][0]
	}
	var scratch [64]float32
	for j := j0; j < j1; j += 64 {
		cols := min(64, j1-j)
		var cp [4]*float32
		for r := range cp {
			cp[r] = &scratch[0]
			if r < rows {
				cp[r] = &c[r*ldc+j : r*ldc+j+cols][0]
			}
		}
		_ = b[(k-1)*ldb+j+cols-1]
		small4x64NN(k, &ap, aStride, &b[j], ldb, &cp, alpha, beta, cols)
	}
}

// smallNT computes columns [j0, j1) of up to four rows of C = alpha*A·Bᵀ + beta*C from contiguous rows of A
// and of b: the kernel takes four columns at a time, and the last j1-j0 mod 4 columns are single dot products.
func smallNT(ar [4][]float32, rows, j0, j1, k int, alpha float32, b []float32, ldb int, beta float32,
	c []float32, ldc int) {
	var ap [4]*float32
	for r := range ap {
		ap[r] = &ar[r][:k][0]
	}
	groups := (j1 - j0) / 4
	if groups > 0 {
		_ = b[(j0+4*groups-1)*ldb+k-1]
		if rows == 4 {
			_ = c[3*ldc+j0+4*groups-1]
			small4xNT(k, &ap, &b[j0*ldb], ldb, &c[j0], ldc, alpha, beta, groups)
		} else {
			var tile [4 * smallChunk]float32
			small4xNT(k, &ap, &b[j0*ldb], ldb, &tile[0], 4*groups, 1, 0, groups)
			mergeTile(tile[:], 4*groups, rows, 4*groups, alpha, beta, c[j0:], ldc)
		}
	}
	for j := j0 + 4*groups; j < j1; j++ {
		bj := b[j*ldb : j*ldb+k]
		for r := 0; r < rows; r++ {
			s := alpha * dot(ar[r][:k], bj)
			if beta != 0 {
				s += beta * c[r*ldc+j]
			}
			c[r*ldc+j] = s
		}
	}
}

// colsAccAVX512 is colsAcc with the 64-column register-accumulating kernel.
func colsAccAVX512(acc, mat []float32, ld, j0 int, x []float32) {
	k := len(x)
	for j := 0; j < len(acc); j += 64 {
		cols := min(64, len(acc)-j)
		_ = mat[(k-1)*ld+j0+j+cols-1]
		gemvCols64AVX512(k, &x[0], &mat[j0+j], ld, &acc[j], cols)
	}
}

// rowsDotAVX512 is rowsDot with the eight-row kernel; a last group of fewer than eight rows overlaps the one
// before it instead of reading past the matrix.
func rowsDotAVX512(out, mat []float32, ld, j0 int, x []float32) {
	k, n := len(x), len(out)
	if n < 8 {
		rowsDotGeneric(out, mat, ld, j0, x)
		return
	}
	groups := n / 8
	_ = mat[(j0+8*groups-1)*ld+k-1]
	gemvRows8AVX512(k, &x[0], &mat[j0*ld], ld, &out[:8*groups][0], groups)
	if n%8 != 0 {
		j := n - 8
		_ = mat[(j0+j+7)*ld+k-1]
		gemvRows8AVX512(k, &x[0], &mat[(j0+j)*ld], ld, &out[j : j+8][0], 1)
	}
}

// useSmallRows switches few-row and matrix-vector products to the AVX-512 kernels when the CPU has them.
func useSmallRows() {
	if hasAVX512() {
		smallRows, smallRowsMax = smallRowsAVX512, 16
		rowsDot, colsAcc = rowsDotAVX512, colsAccAVX512
	}
}
