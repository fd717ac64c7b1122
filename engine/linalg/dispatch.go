package linalg

// The implementations in use, chosen once at init by the architecture-specific files (CPU features, or
// OpenBLAS under the openblas build tag).
var (
	dot       = dotGeneric
	dotSh     = dotShiftGeneric
	axpy      = axpyGeneric
	scale     = scaleGeneric
	scMul     = scaleMulGeneric
	mulSh     = mulShiftGeneric
	normBk    = normBackGeneric
	rotHalf   = rotateHalfGeneric
	mulPr     = mulProdGeneric
	swigluGr  = swigluGradGeneric
	expSum    = expSumGeneric
	sigmoid   = sigmoidGeneric
	maxOf     = maxGeneric
	attScores = attendScoresSgemm
	attWeigh  = attendWeighSgemm
	kernel    = genericKernel
	// narrowKernel, when set, replaces kernel for products with n ≤ narrowKernel.nr.
	narrowKernel *microKernel
	backend      = "generic"
	sgemm        = sgemmGo
	// smallRows computes products of at most smallRowsMax rows (sampling several completions at once), where
	// packing op(B) costs more than it saves. The limits were measured on 256..704-wide layers: one gemv per
	// row beats packing up to 4 rows, the AVX-512 four-row kernels up to 16.
	smallRows    = gemvEachRow
	smallRowsMax = 4
	// rowsDot and colsAcc are the two matrix-vector forms (see gemv.go).
	rowsDot = rowsDotGeneric
	colsAcc = colsAccGeneric
	// skinny, when set, computes a product of an adapter's shape (its rank on one side, a micro-batch's tokens
	// on the other; skinny_amd64.go) and reports true, or reports false for any other product.
	skinny func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
		beta float32, c []float32, ldc int) bool
	// outers, when set, takes AddOuters' products together and reports true, or reports false (the sweep
	// kernels, skinny_amd64.go).
	outers func(k, n int, x []float32, ldx int, parts []OuterPart) bool
	// multT, when set, takes MulTParts' products together and reports true, or reports false (the skinny
	// kernels).
	multT func(m, k int, x []float32, ldx int, parts []TPart) bool
)

// Backend names the Sgemm implementation in use: "avx512", "avx2", "generic" or "openblas".
func Backend() string { return backend }

// smallMACs is the product size below which the unpacked loops beat packing.
const smallMACs = 8192

// sgemmGo is the pure-Go (plus assembly) Sgemm: matrix-vector products, tiny products and the packed path.
func sgemmGo(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	sgemmGoBand(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
}

// sgemmGoBand is sgemmGo with band (nil: none) passed to the blocked kernels; the other paths compute the
// whole product, which is correct for any band.
func sgemmGoBand(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int, band *Band) {
	switch {
	case k == 0 || alpha == 0:
		scaleMatrix(m, n, beta, c, ldc)
	case m == 1 || n == 1:
		gemv(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case m <= 4 && smallRowsMax > 4 && k >= 16:
		// The AVX-512 few-row kernels beat the Go loops at any size: decoding's attention over a shared
		// prompt and the positions after it is two such products, one of them a few positions long.
		smallRows(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case transB && !transA && n <= 16 && k >= 64 && m <= 64 && smallRowsMax > 4:
		// An adapter's down-projection x·Aᵀ in a decoding step (n its rank): the eight-row dot kernel per row
		// of x reads A, a few KB that stay in L1, once a row. The blocked path packed both for 16 µs at
		// 32 × 8 × 576, a twelfth of the multiply-adds' rate, and 210 such products a step made decoding on an
		// adapter 17% slower than on the base. (A training micro-batch's, 384 × 8 × 576, ran 84 µs against 40
		// this way, yet the RL step was no faster, 7.1 s against 6.6 in one run each: the blocked path, whose
		// products the rest of the step overlaps with, stays there.)
		dotsRows(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case skinny != nil && skinny(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
	case m*n*k < smallMACs:
		sgemmNaive(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case transB && m > smallRowsMax && m <= fewRowsMax && k >= 64:
		// Without the AVX-512 few-row kernels (several sequences decoded at once): each row of B dotted
		// with every row of A reads B once and packs nothing. Short dots (a LoRA up-projection, k = rank)
		// cost more in call overhead than packing.
		fewRows(transA, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case m <= smallRowsMax && (m <= 4 || k <= 1024):
		// Past 4 rows the few-row kernels stream op(B) once per 4 rows; with a long k (LoRA's weight
		// gradients, k = tokens) packing once is cheaper.
		smallRows(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	default:
		kern := kernelFor(n)
		workers, release := acquireWorkers(m, n, k)
		defer release()
		sgemmPackedBand(kern, workers, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, band)
	}
}

// gemvEachRow is the portable smallRows: packing op(B) would cost more than streaming it once per row.
func gemvEachRow(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ai := a[i*lda:]
		if transA {
			ai = a[i:]
		}
		gemv(transA, transB, 1, n, k, alpha, ai, lda, b, ldb, beta, c[i*ldc:], ldc)
	}
}

// kernelFor is the blocked kernel for products n columns wide.
func kernelFor(n int) *microKernel {
	if narrowKernel != nil && n <= narrowKernel.nr {
		return narrowKernel
	}
	return kernel
}

// dotsRows sets C = alpha·A·Bᵀ + beta·C row by row with rowsDot, for n ≤ 16 rows of B.
func dotsRows(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ps := dotsPool.Get().(*[256]float32) // not an array here: it would escape through rowsDot's function value
	defer dotsPool.Put(ps)
	dots := ps[:n]
	for i := range m {
		rowsDot(dots, b, ldb, 0, a[i*lda:i*lda+k])
		mergeVector(dots, alpha, beta, c[i*ldc:i*ldc+n], 1)
	}
}
