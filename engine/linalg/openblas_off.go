//go:build !openblas

package linalg

// openblasGemm is nil outside openblas builds, leaving Sgemm to the Go kernels.
var openblasGemm func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int)

// setOpenblasThreads is nil outside openblas builds.
var setOpenblasThreads func(n int)
