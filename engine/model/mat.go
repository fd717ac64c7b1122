package model

import "github.com/trainyard/trainyard/engine/linalg"

// DType is how a Weights holds its matrices: float32, or bfloat16 widened to float32 inside every product
// (half the memory; norms, biases, adapters and all activations stay float32 either way).
type DType string

const (
	F32  DType = "float32"
	BF16 DType = "bfloat16"
)

// Mat is a weight matrix [Rows × Cols] in PyTorch layout, held as float32 (F32) or bfloat16 (BF16): exactly
// one of the two is set.
type Mat struct {
	Rows, Cols int
	F32        []float32
	BF16       []uint16
	// packed, once Weights.Pack has run, is the bfloat16 matrix laid out for the blocked kernel
	// (linalg.PackedBF16), read by the products x·Mᵀ instead of widening and re-packing BF16 each time. Where
	// the packed products serve every row count (linalg.PackedReplacesRowMajor: AVX2, and AVX-512 without
	// bfloat16 dot products) it is the only copy and BF16 is nil; elsewhere BF16 stays for products of fewer
	// than packedMinRows rows and bfloat16 dot products. Either way the matrix must not change after Pack.
	packed *linalg.PackedBF16
	// pairs replaces packed, and BF16, where the pair products (AMX tiles, or VDPBF16PS tiles) take every
	// batched product (linalg.PairsServeBatches when Pack runs): the matrix in their pair layout is then its
	// only copy, read by every product (x·Mᵀ directly, dy·M a transposed block at a time) and by Row. The
	// row-major copy beside it doubled the base's memory (Gemma 3 270M's training step needed 1.46 GiB
	// against its 1.5 GB budget).
	pairs *linalg.PackedPairs
}

// packedMinRows is the fewest rows of x for which x·Mᵀ takes the packed matrix: below it the register tiles,
// which read the row-major matrix and waste no rows of a 6- or 14-row panel, are faster (1536 × 576 on one
// AVX2 core: 46–49 against 33–42 GFLOP per CPU-second at 8 and 16 rows, 34–39 against 49–56 at 32 and 64;
// linalg's BenchmarkPackedBF16).
const packedMinRows = 24

// pack lays out a bfloat16 matrix for the blocked kernel (a no-op for float32 ones, which the kernel packs
// as it goes).
func (m *Mat) pack() {
	if m.BF16 != nil && m.pairs == nil && linalg.PairsServeBatches() {
		if m.pairs = linalg.PackPairs(m.Rows, m.Cols, m.BF16, m.Cols); m.pairs != nil {
			m.BF16 = nil
			return
		}
	}
	if m.BF16 != nil && m.packed == nil && m.pairs == nil {
		m.packed = linalg.PackBF16(m.Rows, m.Cols, m.BF16, m.Cols)
		if linalg.PackedReplacesRowMajor(m.Rows) {
			m.BF16 = nil
		}
	}
}

func newMat(rows, cols int, dtype DType) Mat {
	if dtype == BF16 {
		return Mat{Rows: rows, Cols: cols, BF16: make([]uint16, rows*cols)}
	}
	return Mat{Rows: rows, Cols: cols, F32: make([]float32, rows*cols)}
}

// MulT sets y = x·Mᵀ + beta·y for n rows of x [n × Cols] and y [n × Rows]: a training pass's product, with
// the pair products where the matrix is held in their layout (Pack, under linalg.PairsServeBatches) or
// linalg.BF16Train says so.
func (m *Mat) MulT(n int, x []float32, beta float32, y []float32) {
	m.mulTPlus(n, x, nil, beta, y, nil)
}

// mulTPass is MulT in a pass: with t, when set, taking part in a one-row bfloat16 product (a decoding step
// of one sequence, see linalg.Team), and, in an inference pass (decoding, prefilling for chat), a bfloat16
// product through linalg.SgemmBF16Infer, which uses bfloat16 dot products where they are on
// (linalg.BF16Dot: where they outrun the float32 kernels on this CPU, linalg.BF16Pays). Where the matrix is
// held in the pair layout (m.pairs) every product goes to the pair products, one row too: 57 ms for a
// decoding step of 32 rollouts at SmolLM2-135M's body with Qwen3's vocabulary on an Emerald Rapids Xeon's
// AMX tiles (BenchmarkDecodeRollouts' pairs/32); on a Zen 5 EPYC 74–103 ms on its VDPBF16PS tiles against
// 95–114 for the dot products over the row-major weights; a decoding step of one sequence at SmolLM2-135M's
// shape 11.1–12.3 ms against 12.2–14.0 on the row-major weights through a Team (2-core Zen 4 EPYC,
// enginebench -work infer). Where it is held packed for the float32 kernels, from packedMinRows rows (every
// row where the packed matrix is the only copy) the panel tiles take it.
func (m *Mat) mulTPass(t *linalg.Team, infer bool, n int, x []float32, beta float32, y []float32) {
	switch {
	case m.pairs != nil:
		linalg.SgemmPackedPairs(n, 1, x, m.Cols, m.pairs, beta, y, m.Rows)
	case m.BF16 != nil && t != nil && n == 1:
		linalg.GemvBF16T(t, m.Rows, m.Cols, 1, x, m.BF16, m.Cols, beta, y)
	case m.BF16 != nil && infer && (linalg.BF16Dot() || m.packed == nil || n < packedMinRows):
		linalg.SgemmBF16Infer(false, true, n, m.Rows, m.Cols, 1, x, m.Cols, m.BF16, m.Cols, beta, y, m.Rows)
	default:
		m.MulT(n, x, beta, y)
	}
}

// MulPlus is Mul followed by dx += lr's term (an adapter's du·A; nil: none), which the product adds as it
// writes dx where the matrix is held packed (pairs, or panels for the float32 kernels: linalg.LowRank), and
// Sgemm after it otherwise.
func (m *Mat) MulPlus(n int, dy []float32, beta float32, dx []float32, lr *linalg.LowRank) {
	switch {
	case m.pairs != nil:
		linalg.SgemmPackedPairsNPlus(n, 1, dy, m.Rows, m.pairs, beta, dx, m.Cols, lr)
		return
	case m.BF16 != nil && linalg.BF16Train():
		linalg.SgemmBF16Train(false, n, m.Cols, m.Rows, 1, dy, m.Rows, m.BF16, m.Cols, beta, dx, m.Cols)
	case m.BF16 == nil && m.packed != nil:
		linalg.SgemmPackedBF16NPlus(n, 1, dy, m.Rows, m.packed, beta, dx, m.Cols, lr)
		return
	case m.BF16 != nil:
		linalg.SgemmBF16(false, false, n, m.Cols, m.Rows, 1, dy, m.Rows, m.BF16, m.Cols, beta, dx, m.Cols)
	default:
		linalg.Sgemm(false, false, n, m.Cols, m.Rows, 1, dy, m.Rows, m.F32, m.Cols, beta, dx, m.Cols)
	}
	lr.Add(n, m.Cols, dx, m.Cols)
}

// mulTPlus is MulT, with x's rows rounded to bfloat16 already where x16 is not nil (for the pair products,
// linalg.SgemmPackedPairsRounded), followed by y += lr's term (an adapter's s·u·Bᵀ; nil: none), which the
// product adds as it writes y where the matrix is held packed, and Sgemm after it otherwise.
func (m *Mat) mulTPlus(n int, x []float32, x16 []uint16, beta float32, y []float32, lr *linalg.LowRank) {
	switch {
	case m.pairs != nil:
		linalg.SgemmPackedPairsRoundedPlus(n, 1, x, m.Cols, x16, m.pairs, beta, y, m.Rows, lr)
		return
	case m.BF16 != nil && linalg.BF16Train():
		linalg.SgemmBF16Train(true, n, m.Rows, m.Cols, 1, x, m.Cols, m.BF16, m.Cols, beta, y, m.Rows)
	case m.packed != nil && (m.BF16 == nil || n >= packedMinRows):
		linalg.SgemmPackedBF16Plus(n, 1, x, m.Cols, m.packed, beta, y, m.Rows, lr)
		return
	case m.BF16 != nil:
		linalg.SgemmBF16(false, true, n, m.Rows, m.Cols, 1, x, m.Cols, m.BF16, m.Cols, beta, y, m.Rows)
	default:
		linalg.Sgemm(false, true, n, m.Rows, m.Cols, 1, x, m.Cols, m.F32, m.Cols, beta, y, m.Rows)
	}
	lr.Add(n, m.Rows, y, m.Rows)
}

// Mul sets dx = dy·M + beta·dx for n rows of dy [n × Rows] and dx [n × Cols] (the input gradient of MulT).
func (m *Mat) Mul(n int, dy []float32, beta float32, dx []float32) {
	m.MulPlus(n, dy, beta, dx, nil)
}

// Row copies row i into dst (an embedding lookup).
func (m *Mat) Row(i int, dst []float32) {
	if m.pairs != nil {
		m.pairs.Row(i, dst)
		return
	}
	if m.BF16 == nil && m.packed != nil {
		m.packed.Row(i, dst)
		return
	}
	if m.BF16 != nil {
		linalg.WidenBF16(dst[:m.Cols], m.BF16[i*m.Cols:(i+1)*m.Cols])
		return
	}
	copy(dst[:m.Cols], m.F32[i*m.Cols:(i+1)*m.Cols])
}

// Bytes is the memory the matrix takes, its packed layout included.
func (m *Mat) Bytes() int64 {
	n := int64(len(m.F32))*4 + int64(len(m.BF16))*2
	if m.packed != nil {
		n += m.packed.Bytes()
	}
	if m.pairs != nil {
		n += m.pairs.Bytes()
	}
	return n
}

// set fills the matrix from float32 values, rounding to bfloat16 if that is its storage.
func (m *Mat) set(v []float32) {
	if m.BF16 != nil {
		linalg.RoundBF16(m.BF16, v)
		return
	}
	copy(m.F32, v)
}
