package linalg

import "fmt"

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices, where op(X) is X, or Xᵀ when the
// matching trans flag is set. op(A) is m×k, op(B) is k×n and C is m×n; lda, ldb and ldc are the row strides
// of a, b and c as stored (so lda ≥ k when A is not transposed and lda ≥ m when it is). beta == 0 overwrites
// C without reading it, so NaNs in C are ignored. C must not overlap A or B. Large products run in parallel
// across GOMAXPROCS goroutines; concurrent calls are safe as long as their C regions do not overlap.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// checkSgemm panics with a descriptive message when the dimensions, strides or slice lengths are inconsistent.
func checkSgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("linalg.Sgemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	checkMatrix("A", transA, m, k, a, lda)
	checkMatrix("B", transB, k, n, b, ldb)
	checkMatrix("C", false, m, n, c, ldc)
}

// checkMatrix verifies that x holds a rows×cols matrix op(X) stored row-major with stride ld.
func checkMatrix(name string, trans bool, rows, cols int, x []float32, ld int) {
	r, cl := rows, cols
	if trans {
		r, cl = cols, rows
	}
	if ld < max(cl, 1) {
		panic(fmt.Sprintf("linalg.Sgemm: ld%s=%d smaller than its row width %d", name, ld, cl))
	}
	if r == 0 || cl == 0 {
		return
	}
	if need := (r-1)*ld + cl; len(x) < need {
		panic(fmt.Sprintf("linalg.Sgemm: %s has %d elements, needs %d for %d×%d with stride %d",
			name, len(x), need, r, cl, ld))
	}
}
