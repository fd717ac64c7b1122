package linalg

var (
	dot   = dotGeneric
	axpy  = axpyGeneric
	scale = scaleGeneric
	sgemm = sgemmNaive
)

// Backend names the Sgemm implementation in use: "avx512", "avx2", "generic" or "openblas".
func Backend() string { return "generic" }
