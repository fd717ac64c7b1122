package linalg

// The implementations in use, chosen once at init by the architecture-specific files (CPU features, or
// OpenBLAS under the openblas build tag).
var (
	dot     = dotGeneric
	axpy    = axpyGeneric
	scale   = scaleGeneric
	expSum  = expSumGeneric
	sigmoid = sigmoidGeneric
	maxOf   = maxGeneric
	kernel  = genericKernel
	backend = "generic"
	sgemm   = sgemmGo
)

// Backend names the Sgemm implementation in use: "avx512", "avx2", "generic" or "openblas".
func Backend() string { return backend }

// smallMACs is the product size below which the unpacked loops beat packing, and gemvRowsMax the number of
// rows up to which one matrix-vector product per row beats packing (measured on 256..704-wide layers).
const (
	smallMACs   = 8192
	gemvRowsMax = 4
)

// sgemmGo is the pure-Go (plus assembly) Sgemm: matrix-vector products, tiny products and the packed path.
func sgemmGo(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	switch {
	case k == 0 || alpha == 0:
		scaleMatrix(m, n, beta, c, ldc)
	case m == 1 || n == 1:
		gemv(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case m <= gemvRowsMax:
		// A few rows (sampling several completions at once): packing op(B) would cost more than streaming it
		// once per row.
		for i := 0; i < m; i++ {
			ai := a[i*lda:]
			if transA {
				ai = a[i:]
			}
			gemv(transA, transB, 1, n, k, alpha, ai, lda, b, ldb, beta, c[i*ldc:], ldc)
		}
	case m*n*k < smallMACs:
		sgemmNaive(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	default:
		workers, release := acquireWorkers(m, n, k)
		defer release()
		sgemmPacked(kernel, workers, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}
