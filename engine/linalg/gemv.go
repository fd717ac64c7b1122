package linalg

import "sync"

// gemv handles the matrix-vector products Sgemm receives when m == 1 or n == 1 (sampling computes one token
// at a time). Packing would copy the whole matrix to use it once, so these stream it straight through Dot or
// Axpy instead, splitting the output across goroutines when the matrix is large.
func gemv(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	if m == 1 {
		// c[0, :] = alpha * x·op(B) + beta*c[0, :] with x = op(A)[0, :].
		x := vectorOf(a, transA, lda, k)
		if transB {
			gemvRows(b, ldb, k, x, n, alpha, beta, c, 1) // op(B)[:, j] is row j of b
		} else {
			gemvCols(b, ldb, n, x, k, alpha, beta, c, 1)
		}
		return
	}
	// n == 1: c[:, 0] = alpha * op(A)·y + beta*c[:, 0] with y = op(B)[:, 0].
	y := vectorOf(b, !transB, ldb, k)
	if transA {
		gemvCols(a, lda, m, y, k, alpha, beta, c, ldc) // op(A)[i, :] is column i of a
	} else {
		gemvRows(a, lda, k, y, m, alpha, beta, c, ldc)
	}
}

// vectorOf returns the k values of the first row of a matrix stored with stride ld (or, when strided is
// true, of its first column), copying only when they are not contiguous.
func vectorOf(x []float32, strided bool, ld, k int) []float32 {
	if !strided || ld == 1 {
		return x[:k]
	}
	v := make([]float32, k)
	for p := range v {
		v[p] = x[p*ld]
	}
	return v
}

// gemvChunk is how many outputs one goroutine takes at a time: 4096 floats of accumulator stay in L1 while the
// matrix streams past.
const gemvChunk = 4096

// gemvRows sets out[j*inc] = alpha*Dot(x, M[j, :len(x)]) + beta*out[j*inc] for the rows rows of M (stride ld).
func gemvRows(mat []float32, ld, width int, x []float32, rows int, alpha, beta float32, out []float32, inc int) {
	chunks := (rows + 255) / 256
	workers, release := acquireWorkers(rows, width, 1)
	defer release()
	parallelFor(workers, chunks, func(_, ch int) {
		for j := ch * 256; j < min(rows, ch*256+256); j++ {
			s := alpha * dot(x, mat[j*ld:j*ld+width])
			if beta != 0 {
				s += beta * out[j*inc]
			}
			out[j*inc] = s
		}
	})
}

var accPool = sync.Pool{New: func() any { s := make([]float32, gemvChunk); return &s }}

// gemvCols sets out[j*inc] = alpha*Σ_p x[p]*M[p, j] + beta*out[j*inc] for j < cols, accumulating whole rows of M
// (stride ld) with Axpy into an L1-sized buffer.
func gemvCols(mat []float32, ld, cols int, x []float32, k int, alpha, beta float32, out []float32, inc int) {
	chunks := (cols + gemvChunk - 1) / gemvChunk
	workers, release := acquireWorkers(cols, k, 1)
	defer release()
	chunks = max(chunks, workers) // split mid-sized outputs too, so every worker streams part of the matrix
	size := roundUp((cols+chunks-1)/chunks, 16)
	parallelFor(workers, chunks, func(_, ch int) {
		j0 := ch * size
		if j0 >= cols {
			return
		}
		w := min(size, cols-j0)
		ps := accPool.Get().(*[]float32)
		defer accPool.Put(ps)
		acc := (*ps)[:w]
		clear(acc)
		for p := 0; p < k; p++ {
			axpy(x[p], mat[p*ld+j0:p*ld+j0+w], acc)
		}
		for j, v := range acc {
			o := (j0 + j) * inc
			s := alpha * v
			if beta != 0 {
				s += beta * out[o]
			}
			out[o] = s
		}
	})
}
