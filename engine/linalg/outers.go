package linalg

// OuterPart is one product of AddOuters: C (Rows × n, stride LDC) += Alpha·Uᵀ·X, with U k × Rows (stride LDU).
type OuterPart struct {
	Rows  int
	Alpha float32
	U     []float32
	LDU   int
	C     []float32
	LDC   int
}

// AddOuters adds Alpha·Uᵀ·X to every part's C, X (k × n, stride ldx) being common to them: the A gradients of
// the adapters on projections that read one input (a layer's q, k and v, or its gate and up). Each part's C
// is bit for bit what Sgemm(true, false, Rows, n, k, Alpha, U, LDU, x, ldx, 1, C, LDC) leaves; where the
// sweep kernels take them (AVX2, AVX-512), X is read once for all of them instead of once a part.
func AddOuters(k, n int, x []float32, ldx int, parts []OuterPart) {
	if len(parts) == 0 {
		return
	}
	if outers != nil && k > 0 && n > 0 && outers(k, n, x, ldx, parts) {
		return
	}
	for _, p := range parts {
		Sgemm(true, false, p.Rows, n, k, p.Alpha, p.U, p.LDU, x, ldx, 1, p.C, p.LDC)
	}
}

// TPart is one product of MulTParts: C (m × Cols, stride LDC) = X·Bᵀ, with B Cols × k (stride LDB).
type TPart struct {
	Cols int
	B    []float32
	LDB  int
	C    []float32
	LDC  int
}

// MulTParts sets every part's C to X·Bᵀ, X (m × k, stride ldx) being common to them: the adapters' x·Aᵀ on
// the projections that read one input. Each part's C is bit for bit what Sgemm(false, true, m, Cols, k, 1, x,
// ldx, B, LDB, 0, C, LDC) leaves; where the skinny kernels take them (AVX2, AVX-512), each block of X's rows
// is read once for all of them instead of once a part.
func MulTParts(m, k int, x []float32, ldx int, parts []TPart) {
	if len(parts) == 0 {
		return
	}
	if multT != nil && m > 0 && multT(m, k, x, ldx, parts) {
		return
	}
	for _, p := range parts {
		Sgemm(false, true, m, p.Cols, k, 1, x, ldx, p.B, p.LDB, 0, p.C, p.LDC)
	}
}
