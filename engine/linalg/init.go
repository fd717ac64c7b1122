package linalg

// init picks the fastest implementation available: the best assembly kernels this CPU supports (the generic
// Go kernel otherwise) and, in openblas builds, OpenBLAS for large products.
func init() {
	useSIMDVectors()
	useSmallRows()
	if ks := simdKernels(); len(ks) > 0 {
		kernel = ks[0]
		backend = ks[0].name
	}
	narrowKernel = simdNarrowKernel()
	if openblasGemm != nil {
		sgemm = sgemmHybrid
		backend = "openblas"
	}
}

// openblasMinMACs is the product size from which openblas builds hand Sgemm to OpenBLAS. Below it OpenBLAS's
// thread start-up and spinning cost more than the product: on the engine's attention (128×128×64) and LoRA
// (4096×16×256) shapes it delivered 3-10× fewer GFLOP per CPU-second than the Go kernels (README.md).
const openblasMinMACs = 1 << 27

// sgemmHybrid is the openblas builds' Sgemm: OpenBLAS for large products, the Go paths for the rest.
func sgemmHybrid(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	if m*n*k >= openblasMinMACs && m > smallRowsMax && n > 1 {
		openblasGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	sgemmGo(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
