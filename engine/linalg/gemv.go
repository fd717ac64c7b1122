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
	const chunk = 256
	workers, release := acquireWorkers(rows, width, 1)
	defer release()
	parallelFor(workers, (rows+chunk-1)/chunk, func(_, ch int) {
		j0 := ch * chunk
		// From a pool: an array here escapes through the rowsDot function value, and attention in a
		// decoding step makes thousands of these products (17 MB of garbage per step of 32 sequences).
		ps := dotsPool.Get().(*[chunk]float32)
		defer dotsPool.Put(ps)
		dots := ps[:min(chunk, rows-j0)]
		rowsDot(dots, mat, ld, j0, x[:width])
		mergeVector(dots, alpha, beta, out[j0*inc:], inc)
	})
}

var dotsPool = sync.Pool{New: func() any { return new([256]float32) }}

var accPool = sync.Pool{New: func() any { s := make([]float32, gemvChunk); return &s }}

// gemvCols sets out[j*inc] = alpha*Σ_p x[p]*M[p, j] + beta*out[j*inc] for j < cols, M's rows ld apart.
func gemvCols(mat []float32, ld, cols int, x []float32, k int, alpha, beta float32, out []float32, inc int) {
	chunks := (cols + gemvChunk - 1) / gemvChunk
	workers, release := acquireWorkers(cols, k, 1)
	defer release()
	chunks = max(chunks, workers) // split mid-sized outputs too, so every worker streams part of the matrix
	size := roundUp((cols+chunks-1)/chunks, 64)
	parallelFor(workers, chunks, func(_, ch int) {
		j0 := ch * size
		if j0 >= cols {
			return
		}
		ps := accPool.Get().(*[]float32)
		defer accPool.Put(ps)
		acc := (*ps)[:min(size, cols-j0)]
		colsAcc(acc, mat, ld, j0, x[:k])
		mergeVector(acc, alpha, beta, out[j0*inc:], inc)
	})
}

// mergeVector sets out[j*inc] = alpha*v[j] + beta*out[j*inc] (beta == 0 overwrites).
func mergeVector(v []float32, alpha, beta float32, out []float32, inc int) {
	for j, s := range v {
		o := j * inc
		if beta == 0 {
			out[o] = alpha * s
		} else {
			out[o] = alpha*s + beta*out[o]
		}
	}
}

// rowsDotGeneric sets out[j] = Dot(x, M[j0+j, :len(x)]) for j < len(out), M's rows ld apart.
func rowsDotGeneric(out, mat []float32, ld, j0 int, x []float32) {
	for j := range out {
		r := (j0 + j) * ld
		out[j] = dot(x, mat[r:r+len(x)])
	}
}

// colsAccGeneric sets acc[j] = Σ_p x[p]·M[p, j0+j] for j < len(acc), adding whole row slices with Axpy.
func colsAccGeneric(acc, mat []float32, ld, j0 int, x []float32) {
	clear(acc)
	for p, xp := range x {
		axpy(xp, mat[p*ld+j0:p*ld+j0+len(acc)], acc)
	}
}
