package linalg

import (
	"math"
	"sync/atomic"
)

// bfloat16 weights: frozen base-model matrices are stored as the upper 16 bits of float32 (half the memory
// and half the bytes streamed per decoded token) and widened to float32 on the fly, so every product still
// multiplies and accumulates in float32.

// The implementations in use (AVX2 on amd64 when present, see bf16_amd64.go).
var (
	widenBF16 = widenBF16Generic
	dotBF16   = dotBF16Generic
	// tilesBF16, when set (AVX-512 or AVX2), computes C = alpha·A·Bᵀ + beta·C for 2..tilesMaxRows row-major rows of A
	// and B stored n × k with register-tiled kernels that widen B in registers.
	tilesBF16 func(m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)
)

// tilesDot, when set (avx512_bf16), is tilesBF16 with the activations rounded to bfloat16 and bfloat16 dot
// products (SgemmBF16Infer, while bf16Dot is on).
var tilesDot func(m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)

// bf16Dot says whether SgemmBF16Infer uses tilesDot: on where the CPU has it, unless SetBF16Dot turned it off.
var bf16Dot atomic.Bool

// SetBF16Dot turns bfloat16 dot products for inference on or off (they are on by default where the CPU has
// avx512_bf16) and reports whether they are on now: never on a CPU without them.
func SetBF16Dot(on bool) bool {
	bf16Dot.Store(on && tilesDot != nil)
	return bf16Dot.Load()
}

// BF16Dot reports whether SgemmBF16Infer uses bfloat16 dot products.
func BF16Dot() bool { return bf16Dot.Load() }

// pairProducts, when set (pairs_amd64.go: AMX tiles, or VDPBF16PS register tiles where the CPU has
// avx512_bf16 and no AMX), multiplies float32 activations rounded to bfloat16 with bfloat16 weights, float32
// sums: C = alpha·A·op(B) + beta·C with op(B) = Bᵀ (B n × k,
// transB) or B (k × n), A row-major.
// With pre (op(B) = Bᵀ only), B's panels come from that packed copy and b is not read.
// With rounded (pre only, see SgemmPackedPairsRounded), A's rows come rounded already. With lr, its term is
// added to each block of C as it is written (LowRank). With split (pre fused by FusePairs, transB, beta 0),
// C's columns of each of pre's parts go to a matrix of their own, split[i] (as wide as part i), and c is
// not read.
var pairProducts func(transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, pre *PackedPairs,
	beta float32, c []float32, ldc int, rounded []uint16, lr *LowRank, split [][]float32)

// bf16Train says whether SgemmBF16Train rounds activations to bfloat16 for the pair products: on where the
// CPU has them, unless SetBF16Train turned it off.
var bf16Train atomic.Bool

// SetBF16Train turns training's bfloat16 products (SgemmBF16Train on the pair products) on or off (on by
// default where the CPU has them) and reports whether they are on now: never on a CPU without them.
func SetBF16Train(on bool) bool {
	bf16Train.Store(on && pairProducts != nil)
	return bf16Train.Load()
}

// BF16Train reports whether SgemmBF16Train rounds activations to bfloat16.
func BF16Train() bool { return bf16Train.Load() }

// BF16Pays reports whether the bfloat16 products outrun the float32 kernels on this CPU, and so are on by
// default (BF16Train, BF16Dot): AMX's tiles, or VDPBF16PS where it does more multiply-adds per second than the
// FMAs (AMD's Zen 4 and 5; not Intel's Xeons, which issue it at a quarter of their rate).
func BF16Pays() bool { return bf16Pays }

var bf16Pays bool

// Pairs reports whether this CPU has the pair products: SgemmBF16Infer takes them while BF16Dot is on, and
// SgemmBF16Train while BF16Train is.
func Pairs() bool { return pairProducts != nil }

// PairsKernel names the pair products' kernel here ("AMX tiles" or "VDPBF16PS tiles"), "" where there are
// none.
func PairsKernel() string { return pairsKernel }

var pairsKernel string

// PairsServeBatches reports whether the pair products take every batched product with a frozen base,
// training's and chat's, so that a layout packed for the blocked kernel (PackBF16) would never be read.
func PairsServeBatches() bool { return pairProducts != nil && bf16Train.Load() && bf16Dot.Load() }

// pairsMinRows is the fewest rows of A a product over row-major weights takes to the pair products: fewer
// leave most of an AMX tile's 16 rows (a dotPanel tile's 8) empty, and the register tiles over the row-major
// weights do as well. (Weights held only in the pair layout, SgemmPackedPairs, take any number.)
const pairsMinRows = 8

// pairsTake reports whether sgemmPairs can compute the product: row-major A, a contraction of at least one
// tile's 32 values, and for op(B) = Bᵀ whole 32-bit pairs of B's rows.
func pairsTake(transA, transB bool, m, k, ldb int) bool {
	return pairProducts != nil && !transA && m >= pairsMinRows && k >= 32 && (!transB || (k%2 == 0 && ldb%2 == 0))
}

// SgemmBF16Train is SgemmBF16 for a training step's products with the frozen base (x·Wᵀ forward, dy·W
// backward): on a CPU with the pair products, unless SetBF16Train(false), the rows of A (activations or
// output gradients) are rounded to bfloat16 and multiplied with the weights in bfloat16 (AMX tiles or
// VDPBF16PS), sums in float32 — mixed
// precision as PyTorch's autocast does it; the adapters, their gradients and the optimizer stay float32. The
// logits and LoRA gradients this moves are bounded in engine/model's TestBF16TrainProducts.
func SgemmBF16Train(transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int,
	beta float32, c []float32, ldc int) {
	if !(bf16Train.Load() && pairProduct("SgemmBF16Train", false, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) {
		SgemmBF16(false, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// pairProduct computes the product with the pair products and reports true, or reports false (nothing done) where
// they cannot take it (pairsTake). name is the caller's, for a panic on slices too short for the shape.
func pairProduct(name string, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int,
	beta float32, c []float32, ldc int) bool {
	if !pairsTake(transA, transB, m, k, ldb) || alpha == 0 {
		return false
	}
	checkBF16Product(name, false, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if n > 0 {
		pairProducts(transB, m, n, k, alpha, a, lda, b, ldb, nil, beta, c, ldc, nil, nil, nil)
	}
	return true
}

// checkBF16Product panics unless the slices hold the product's matrices (B bfloat16); name is the caller's.
func checkBF16Product(name string, transA, transB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, c []float32, ldc int) {
	checkMatrix("A", transA, m, k, a, lda)
	checkMatrix("C", false, m, n, c, ldc)
	r, cl := k, n
	if transB {
		r, cl = n, k
	}
	if ldb < max(cl, 1) || (r > 0 && cl > 0 && len(b) < (r-1)*ldb+cl) {
		panic("linalg." + name + ": B too short for its shape and stride")
	}
}

// SgemmBF16Infer is SgemmBF16 for inference (decoding and prefilling for chat): on a CPU with avx512_bf16,
// unless SetBF16Dot(false), a product of 2 to 64 rows rounds those rows of activations to bfloat16 and
// multiplies them with the weights in bfloat16 dot products, accumulated in float32 — twice the multiply-adds
// per instruction, at the cost of the activations' rounding (a relative 2⁻⁹ per value; logits and log-probabilities
// moved by at most 0.0072 at SmolLM2-135M's width, engine/model's TestBF16DotLogits). Products of
// pairsMinRows rows or more (any number, prefilling too) take the pair products (AMX tiles, or the VDPBF16PS
// panel tiles), with the same rounding.
// Training's products take SgemmBF16Train.
func SgemmBF16Infer(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int,
	beta float32, c []float32, ldc int) {
	if bf16Dot.Load() && pairProduct("SgemmBF16Infer", transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	if transB && !transA && m >= 2 && m <= tilesMaxRows && k >= 32 && bf16Dot.Load() {
		checkBF16Product("SgemmBF16Infer", false, true, m, n, k, a, lda, b, ldb, c, ldc)
		if n == 0 {
			return
		}
		tilesDot(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	SgemmBF16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// tilesMaxRows is the most rows of A tilesBF16 takes: a decoding step of up to 64 sequences, whose rows of
// activations stay in L2 (64 × 1,536 floats is 384 KiB) while the weights stream past them.
const tilesMaxRows = 64

// WidenBF16 sets dst[i] to the float32 value of the bfloat16 src[i], for i < len(src).
func WidenBF16(dst []float32, src []uint16) {
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	widenBF16(dst[:len(src)], src)
}

// RoundBF16 sets dst[i] to src[i] rounded to the nearest bfloat16 (ties to even; NaN stays NaN).
func RoundBF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = ToBF16(v)
	}
}

// ToBF16 rounds v to the nearest bfloat16 (ties to even; NaN stays a quiet NaN).
func ToBF16(v float32) uint16 {
	b := math.Float32bits(v)
	if v != v {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

func widenBF16Generic(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = fromBF16(h)
	}
}

func dotBF16Generic(x []float32, y []uint16) float32 {
	y = y[:len(x)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += x[i] * fromBF16(y[i])
		s1 += x[i+1] * fromBF16(y[i+1])
	}
	if i < len(x) {
		s0 += x[i] * fromBF16(y[i])
	}
	return s0 + s1
}

// bf16Chunk is how many bfloat16 values of B one Sgemm call of SgemmBF16 widens at a time: 1 Mi floats (4 MiB
// of float32), at least a whole nc block of the packed path, so the blocked kernel sees the same shapes.
const bf16Chunk = 1 << 20

// bf16SmallChunk is the widened block for products of a few rows (decoding): 64 Ki floats stay in L2 while
// each row of A passes over them.
const bf16SmallChunk = 1 << 16

// SgemmBF16 is Sgemm with B stored as bfloat16 (same layout rules): C = alpha·op(A)·op(B) + beta·C in
// float32. A single row times Bᵀ (one decoded token through a weight matrix) streams B through a fused
// widen-and-dot kernel; everything else widens B a block at a time into float32 scratch and runs Sgemm on
// it, so the blocked kernels, their packing and their parallelism are those of Sgemm.
func SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int,
	beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic("linalg.SgemmBF16: negative dimension")
	}
	checkBF16Product("SgemmBF16", transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleMatrix(m, n, beta, c, ldc)
		return
	}
	if transB {
		if m == 1 {
			x := vectorOf(a, transA, lda, k)
			gemvRowsBF16(b, ldb, x, n, alpha, beta, c)
			return
		}
		if tilesBF16 != nil && !transA && m <= tilesMaxRows && k >= 16 {
			tilesBF16(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		if m <= fewRowsMax {
			fewRowsBF16(transA, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		sgemmBF16Cols(transA, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if openblasGemm == nil && m > fewRowsMax && m*n*k >= smallMACs {
		// op(B) = B, k × n, for many rows (the input gradient of a training step, dy·W): the blocked driver
		// widens each kc×nr panel straight from B's rows, as it would copy float32 ones.
		kern := kernelFor(n)
		workers, release := acquireWorkers(m, n, k)
		defer release()
		sgemmBlocked(kern, workers, transA, m, n, k, alpha, a, lda, func(dst []float32, p0, kc, j0, cols int) {
			for pp := range kc {
				d := dst[pp*kern.nr : (pp+1)*kern.nr]
				widenBF16(d[:cols], b[(p0+pp)*ldb+j0:(p0+pp)*ldb+j0+cols])
				clear(d[cols:])
			}
		}, beta, c, ldc, nil, nil)
		return
	}
	// op(B) = B, k × n, for a few rows: widen blocks of whole rows of B (k-steps) and accumulate their
	// products into C.
	rows := max(1, bf16Chunk/n)
	scratch := getScratch(min(rows, k) * n)
	defer putScratch(scratch)
	for p0 := 0; p0 < k; p0 += rows {
		kb := min(rows, k-p0)
		w := (*scratch)[:kb*n]
		widenRows(w, b, ldb, p0, kb, n)
		ap := a[p0:]
		if transA {
			ap = a[p0*lda:]
		}
		bt := beta
		if p0 > 0 {
			bt = 1
		}
		Sgemm(transA, false, m, n, kb, alpha, ap, lda, w, n, bt, c, ldc)
	}
}

// sgemmBF16Cols computes op(A)·Bᵀ with B stored n × k, a block of B's rows (columns of C) at a time. For a
// few rows of A the blocks are small and widened by parallel workers, each running the product of its
// block; for many rows one block at a time is widened and Sgemm parallelises the product itself.
func sgemmBF16Cols(transA bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int,
	beta float32, c []float32, ldc int) {
	chunk, workers, release := bf16Chunk, 1, func() {}
	if m <= 16 {
		chunk = bf16SmallChunk
		workers, release = acquireWorkers(m, n, k)
	}
	defer release()
	cols := max(1, chunk/k)
	if m > 16 && cols >= 32 {
		cols = cols / 32 * 32
	}
	blocks := (n + cols - 1) / cols
	parallelFor(workers, blocks, func(_, blk int) {
		j0 := blk * cols
		nb := min(cols, n-j0)
		scratch := getScratch(nb * k)
		defer putScratch(scratch)
		w := (*scratch)[:nb*k]
		if workers > 1 { // the workers already split the blocks
			for j := 0; j < nb; j++ {
				widenBF16(w[j*k:(j+1)*k], b[(j0+j)*ldb:(j0+j)*ldb+k])
			}
		} else {
			widenRows(w, b, ldb, j0, nb, k)
		}
		sgemm(transA, true, m, nb, k, alpha, a, lda, w, k, beta, c[j0:], ldc)
	})
}

// widenRows widens rows [r0, r0+rows) of the bfloat16 matrix b (stride ldb, width cols) into w (stride cols),
// in parallel for large blocks: a 4 MiB block (a slice of a 150k-token vocabulary's head) takes milliseconds
// on one core, which the product it feeds would otherwise wait for.
func widenRows(w []float32, b []uint16, ldb, r0, rows, cols int) {
	const band = 64
	workers, release := acquireWorkers(rows, cols, 16)
	defer release()
	parallelFor(workers, (rows+band-1)/band, func(_, i int) {
		for r := i * band; r < min(rows, (i+1)*band); r++ {
			widenBF16(w[r*cols:(r+1)*cols], b[(r0+r)*ldb:(r0+r)*ldb+cols])
		}
	})
}

// fewRowsMax is the most rows of A fewRowsBF16 takes: up to it, dotting each widened row of B with every
// row of A beats widening B into blocks and packing them for the blocked kernel (decoding 8 sequences of
// SmolLM2-135M's shape: BenchmarkBaseDType/decode8).
const fewRowsMax = 16

// fewRowsBF16 computes C = alpha·op(A)·Bᵀ + beta·C for a few rows of A (several sequences decoded together)
// with B stored n × k in bfloat16. Each row of B is widened once, into a buffer that stays in L1, and dotted
// with every row of op(A), which stay in L2: B streams from memory once for all the rows, as in a
// matrix-vector product, instead of being widened into blocks and then packed.
func fewRowsBF16(transA bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int,
	beta float32, c []float32, ldc int) {
	fewRowsOf(transA, m, n, k, alpha, a, lda, 2, func(j int, w []float32) []float32 {
		widenBF16(w, b[j*ldb:j*ldb+k])
		return w
	}, beta, c, ldc)
}

// fewRows is fewRowsBF16 for float32 B, read in place.
func fewRows(transA bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	fewRowsOf(transA, m, n, k, alpha, a, lda, 4, func(j int, _ []float32) []float32 {
		return b[j*ldb : j*ldb+k]
	}, beta, c, ldc)
}

// fewRowsOf is the loop of fewRows and fewRowsBF16: rowOf returns row j of B as float32 (in the k-value
// buffer it is given, or in place); size is the bytes of a stored value, which decide the parallelism and
// whether rows need a buffer.
func fewRowsOf(transA bool, m, n, k int, alpha float32, a []float32, lda, size int,
	rowOf func(j int, buf []float32) []float32, beta float32, c []float32, ldc int) {
	const limit = 256
	rows := make([][]float32, m)
	for i := range rows {
		if transA {
			rows[i] = vectorOf(a[i:], true, lda, k)
		} else {
			rows[i] = a[i*lda : i*lda+k]
		}
	}
	workers, release := acquireStreamWorkers(size * n * k)
	defer release()
	chunk := streamChunk(n, workers, limit)
	parallelFor(workers, (n+chunk-1)/chunk, func(_, ch int) {
		var w []float32
		if size < 4 { // a row to widen needs a buffer; float32 rows are read in place
			buf := getScratch(k)
			defer putScratch(buf)
			w = (*buf)[:k]
		}
		for j := ch * chunk; j < min(n, (ch+1)*chunk); j++ {
			w := rowOf(j, w)
			for i, x := range rows {
				merge(c, i*ldc+j, alpha*dot(x, w), beta)
			}
		}
	})
}

// gemvRowsBF16 sets out[j] = alpha·Dot(x, B[j, :]) + beta·out[j] for the n rows of B, in parallel chunks.
func gemvRowsBF16(b []uint16, ldb int, x []float32, n int, alpha, beta float32, out []float32) {
	const chunk = 256
	k := len(x)
	workers, release := acquireWorkers(n, k, 1)
	defer release()
	parallelFor(workers, (n+chunk-1)/chunk, func(_, ch int) {
		rowsDotBF16(b, ldb, x, ch*chunk, min(chunk, n-ch*chunk), alpha, beta, out)
	})
}

// rowsDotBF16 sets out[j] = alpha·Dot(x, B[j, :]) + beta·out[j] for the rows j0 .. j0+rows-1 of B (at most
// 256): one claimed chunk of a matrix-vector product.
func rowsDotBF16(b []uint16, ldb int, x []float32, j0, rows int, alpha, beta float32, out []float32) {
	var tmp [256]float32
	dots := tmp[:rows]
	k := len(x)
	for j := range dots {
		dots[j] = dotBF16(x, b[(j0+j)*ldb:(j0+j)*ldb+k])
	}
	mergeVector(dots, alpha, beta, out[j0:], 1)
}

// scratch holds the widened blocks of bfloat16 matrices: up to 4 MiB, too big to allocate per call.
var scratch = make(freeList[float32], 8)

// getScratch returns a float32 buffer of n values from scratch.
func getScratch(n int) *[]float32 { return scratch.get(n) }

func putScratch(s *[]float32) { scratch.put(s) }

// gathered16 holds the blocks of W that sgemmBlockedBF16N gathers in bfloat16.
var gathered16 = make(freeList[uint16], 4)

func getBF16Scratch(n int) *[]uint16 { return gathered16.get(n) }

func putBF16Scratch(s *[]uint16) { gathered16.put(s) }

// freeList is a small free list of buffers.
type freeList[T any] chan *[]T

// get returns a buffer of n values, reusing a free one when it is large enough.
func (f freeList[T]) get(n int) *[]T {
	select {
	case s := <-f:
		if cap(*s) >= n {
			*s = (*s)[:n]
			return s
		}
	default:
	}
	s := make([]T, n)
	return &s
}

// put hands a buffer back (dropped when the list is full).
func (f freeList[T]) put(s *[]T) {
	select {
	case f <- s:
	default:
	}
}

// fromBF16 is the float32 value of a bfloat16.
func fromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// merge sets c[o] = v + beta·c[o] (v alone when beta is 0, whatever c held).
func merge(c []float32, o int, v, beta float32) {
	if beta == 0 {
		c[o] = v
	} else {
		c[o] = v + beta*c[o]
	}
}
