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
		setOpenblasThreads(1)
	}
}

// openblasMinMACs is the product size from which openblas builds hand Sgemm to OpenBLAS. Below it OpenBLAS's
// thread start-up and spinning cost more than the product: on the engine's attention (128×128×64) and LoRA
// (4096×16×256) shapes it delivered 3-10× fewer GFLOP per CPU-second than the Go kernels (README.md).
const openblasMinMACs = 1 << 27

// sgemmHybrid is the openblas builds' Sgemm: OpenBLAS for large products, the Go paths for the rest.
//
// OpenBLAS runs single-threaded here and the product is split into bands of rows of C, one per goroutine:
// OpenBLAS's own threads spin for a while after each call, and in a training step that spinning took the
// cores from the engine's goroutines doing the row-wise work between products (whole RL step 30 % slower
// than the Go kernels, whose products alone run as fast). Row lo of op(A) starts at a[lo*lda], or at a[lo]
// when A is transposed.
func sgemmHybrid(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	if m*n*k >= openblasMinMACs && m > smallRowsMax && n > 1 {
		workers, release := acquireWorkers(m, n, k)
		defer release()
		parallelFor(workers, workers, func(_, i int) {
			lo, hi := i*m/workers, (i+1)*m/workers
			aOff := lo * lda
			if transA {
				aOff = lo
			}
			openblasGemm(transA, transB, hi-lo, n, k, alpha, a[aOff:], lda, b, ldb, beta, c[lo*ldc:], ldc)
		})
		return
	}
	sgemmGo(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
