package linalg

import (
	"fmt"

	"github.com/trainyard/trainyard/internal/prefault"
)

// PackedPairs is a frozen bfloat16 matrix W [n × k] (out × in) laid out once for the pair products x·Wᵀ:
// for each panel of 32 rows of W, for each step of 32 contraction values, 16 rows of 32 pairs (the two
// values of W's row j at contraction values 2r and 2r+1, for the panel's 32 rows j), 2 KiB. A product then
// streams contiguous panels straight into the tiles (AMX's or dotPanel's); without it every product (every decoded token of a
// batch) transposed the weights into that layout again, which cost a decoding step more than its products.
type PackedPairs struct {
	n, k, steps int
	data        []uint16
	parts       []int // the rows of each matrix FusePairs fused into this one (nil: not fused)
}

// pairPanelT, when set (pairs_amd64.go), writes the panel of W's rows j0 .. j0+cols-1 (cols ≤ 32) over
// contraction values p0 .. p0+kc-1 (p0 and kc even) into dst in the pair layout, zero past cols and kc.
var pairPanelT func(dst, w []uint16, ldw, j0, cols, p0, kc int)

// PackedPairsBytes is the memory PackPairs takes for an n × k matrix.
func PackedPairsBytes(n, k int) int64 {
	return int64((n+31)/32*32) * int64((k+31)/32*32) * 2
}

// PacksPairs reports whether PackPairs lays out an n × k matrix (with an even row stride): where the CPU has
// the pair products, for an even k of at least one step's 32 values, as the other products take them
// (pairsTake).
func PacksPairs(n, k int) bool { return pairPanelT != nil && n > 0 && k >= 32 && k%2 == 0 }

// PackPairs lays out the n × k bfloat16 matrix w (row stride ldw) for SgemmPackedPairs; nil where PacksPairs says
// no, or for an odd stride (the pairs are 32-bit words of W's rows).
func PackPairs(n, k int, w []uint16, ldw int) *PackedPairs {
	if !PacksPairs(n, k) || ldw%2 != 0 {
		return nil
	}
	if ldw < k || len(w) < (n-1)*ldw+k {
		panic(fmt.Sprintf("linalg.PackPairs: %d values with stride %d cannot hold %d×%d", len(w), ldw, n, k))
	}
	steps := (k + 31) / 32
	p := &PackedPairs{n: n, k: k, steps: steps, data: make([]uint16, PackedPairsBytes(n, k)/2)}
	prefault.Slice(p.data)
	panels := (n + 31) / 32
	workers, release := acquireWorkers(n, k, 1)
	defer release()
	parallelFor(workers, panels, func(_, jp int) {
		pairPanelT(p.panel(jp), w, ldw, jp*32, min(32, n-jp*32), 0, k)
	})
	return p
}

// panel is the stored panel of W's rows 32·jp .. 32·jp+31 over every step.
func (p *PackedPairs) panel(jp int) []uint16 {
	const stepWords = 16 * 64
	return p.data[jp*p.steps*stepWords : (jp+1)*p.steps*stepWords]
}

// Row widens row i of W into dst[:k] (an embedding lookup on a tied head that is only held packed).
func (p *PackedPairs) Row(i int, dst []float32) {
	if i < 0 || i >= p.n {
		panic(fmt.Sprintf("linalg.PackedPairs.Row: row %d of %d", i, p.n))
	}
	dst = dst[:p.k]
	panel, r := p.panel(i/32), i%32
	for q := range dst {
		// Step q/32, its pair row q%32/2, the row's word, the pair's value.
		dst[q] = fromBF16(panel[q/32*16*64+q%32/2*64+2*r+q%2])
	}
}

// SgemmPackedPairsN computes C = alpha·A·W + beta·C for the m × n row-major A (stride lda) and the packed n × k
// W, into the m × k C (stride ldc): the input gradient dy·W of a product x·Wᵀ, on the pair products with
// A's rows rounded to bfloat16 (SgemmBF16Train's numerics), W's blocks transposed from the packed layout as
// the product goes, so that no row-major copy of W need be kept.
func SgemmPackedPairsN(m int, alpha float32, a []float32, lda int, p *PackedPairs, beta float32, c []float32, ldc int) {
	p.product(false, m, alpha, a, lda, beta, c, ldc, nil)
}

// SgemmPackedPairsNPlus is SgemmPackedPairsN followed by C += lr's term (LowRank: an adapter's du·A), added
// to each block of C as the product writes it.
func SgemmPackedPairsNPlus(m int, alpha float32, a []float32, lda int, p *PackedPairs, beta float32, c []float32, ldc int,
	lr *LowRank) {
	p.product(false, m, alpha, a, lda, beta, c, ldc, lr)
}

// FusePairs moves the packed matrices ps, all over the same contraction and each but the last a whole
// number of 32-row panels, into one allocation, one after another, and returns them as one matrix: their
// rows stacked, W = [W₀; W₁; …], which one product multiplies (SgemmPackedPairsSplit: each part's columns
// of x·Wᵀ into a matrix of their own). Each of ps reads its part of the allocation from then on, so the
// fused matrix costs no memory of its own. The layout is panel after panel, so the parts' panels are
// already the fused matrix's. Nil, and ps unchanged, when they do not fit together.
//
// A decoding step of 32 sequences multiplies its rows by a layer's q, k and v (576, 192 and 192 rows at
// SmolLM2-135M's shape) and by gate and up: products of a few panels for each of the two workers, each
// product's first panel a worker's cold read from memory and each a fork and join of its own.
func FusePairs(ps ...*PackedPairs) *PackedPairs {
	if len(ps) < 2 {
		return nil
	}
	total := 0
	for i, p := range ps {
		if p == nil || p.k != ps[0].k || i < len(ps)-1 && p.n%32 != 0 {
			return nil
		}
		total += len(p.data)
	}
	f := &PackedPairs{k: ps[0].k, steps: ps[0].steps, data: make([]uint16, total)}
	prefault.Slice(f.data)
	off := 0
	for _, p := range ps {
		n := copy(f.data[off:], p.data)
		p.data = f.data[off : off+n : off+n]
		off += n
		f.n += p.n
		f.parts = append(f.parts, p.n)
	}
	return f
}

// SgemmPackedPairsSplit computes x·Wᵀ for the m × k row-major A (stride lda) and W fused by FusePairs, each
// part's columns into a matrix of their own: cs[i] = A·W_iᵀ, m rows as wide as part i's rows (beta 0). The
// sums are SgemmPackedPairs', bit for bit, with W_i alone or fused.
func SgemmPackedPairsSplit(m int, a []float32, lda int, p *PackedPairs, cs ...[]float32) {
	if len(cs) != len(p.parts) {
		panic(fmt.Sprintf("linalg.SgemmPackedPairsSplit: %d outputs for %d fused matrices", len(cs), len(p.parts)))
	}
	checkMatrix("A", false, m, p.k, a, lda)
	for i, c := range cs {
		checkMatrix("C", false, m, p.parts[i], c, p.parts[i])
	}
	if m > 0 {
		pairProducts(true, m, p.n, p.k, 1, a, lda, nil, 0, p, 0, nil, 0, nil, nil, cs)
	}
}

// Rows is the number of rows of W (the product x·Wᵀ's output columns).
func (p *PackedPairs) Rows() int { return p.n }

// Bytes is the memory the packed matrix takes.
func (p *PackedPairs) Bytes() int64 { return int64(len(p.data)) * 2 }

// SgemmPackedPairs computes C = alpha·A·Wᵀ + beta·C for the m × k row-major A (stride lda) and the packed n × k
// W, into the m × n C (stride ldc), with the pair products: A's rows rounded to bfloat16, sums in float32
// (SgemmBF16Train's and SgemmBF16Infer's numerics).
func SgemmPackedPairs(m int, alpha float32, a []float32, lda int, p *PackedPairs, beta float32, c []float32, ldc int) {
	p.product(true, m, alpha, a, lda, beta, c, ldc, nil)
}

// product is SgemmPackedPairs (transB: A·Wᵀ, A m × k) or SgemmPackedPairsN (A·W, A m × n).
// With lr, C += lr's term after (LowRank).
func (p *PackedPairs) product(transB bool, m int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int,
	lr *LowRank) {
	in, out := p.k, p.n
	if !transB {
		in, out = p.n, p.k
	}
	checkMatrix("A", false, m, in, a, lda)
	checkMatrix("C", false, m, out, c, ldc)
	lr.check(m, out)
	if m <= 0 {
		return
	}
	switch {
	case alpha == 0:
		scaleMatrix(m, out, beta, c, ldc)
		lr.Add(m, out, c, ldc)
		return
	case lr != nil && !lr.blocked(m, out):
		pairProducts(transB, m, out, in, alpha, a, lda, nil, 0, p, beta, c, ldc, nil, nil, nil)
		lr.Add(m, out, c, ldc)
		return
	}
	pairProducts(transB, m, out, in, alpha, a, lda, nil, 0, p, beta, c, ldc, nil, lr, nil)
}

// RoundedRows reports whether SgemmPackedPairsRounded takes rows of k values rounded ahead
// (RoundRowBF16): where there are pair products and k is one block of their contraction (2,048 values at
// most).
func RoundedRows(k int) bool { return roundedRows(k) }

// RoundedStride is the stride, in values, of rows of k values rounded for SgemmPackedPairsRounded: k rounded
// up to a step of 32.
func RoundedStride(k int) int { return (k + 31) / 32 * 32 }

// RoundedLen is the length of SgemmPackedPairsRounded's rounded for m rows of k values: the products read
// rows in blocks of 32, so m rounded up to 32 rows of RoundedStride(k).
func RoundedLen(m, k int) int { return (m + 31) / 32 * 32 * RoundedStride(k) }

// RoundRowBF16 rounds src, row i of A, to bfloat16 into rounded (RoundedLen values for A's rows), where
// SgemmPackedPairsRounded reads it, as the product would round it, zeros past its end: in a row of
// RoundedStride(len(src)) values at rounded[i·RoundedStride:], or, for AMX's tiles, in their order (each
// block of 32 rows a step of 32 values at a time; the block's place is the same).
func RoundRowBF16(rounded []uint16, i int, src []float32) {
	if roundRow != nil {
		roundRow(rounded, i, src)
		return
	}
	ld := RoundedStride(len(src))
	dst := rounded[i*ld : (i+1)*ld]
	RoundBF16(dst, src)
	clear(dst[len(src):])
}

// roundRow is RoundRowBF16's vector version (pairs_amd64.go).
var roundRow func(rounded []uint16, i int, src []float32)

// SgemmPackedPairsRounded is SgemmPackedPairs with A's rows rounded to bfloat16 already (RoundRowBF16,
// RoundedLen(m, k) values): a producer that rounds its rows as it writes them, while they are in cache,
// spares the product reading A from memory to round it — once for each product that multiplies the same
// rows (a layer's q, k and v; gate and up). The sums are SgemmPackedPairs', bit for bit. Where
// RoundedRows(k) says no, rounded is not read and a is rounded as SgemmPackedPairs rounds it.
func SgemmPackedPairsRounded(m int, alpha float32, a []float32, lda int, rounded []uint16, p *PackedPairs,
	beta float32, c []float32, ldc int) {
	SgemmPackedPairsRoundedPlus(m, alpha, a, lda, rounded, p, beta, c, ldc, nil)
}

// SgemmPackedPairsRoundedPlus is SgemmPackedPairsRounded followed by C += lr's term (LowRank: an adapter's
// s·u·Bᵀ), added to each block of C as the product writes it; nil lr: none. With rounded nil, the product
// rounds A's rows itself (SgemmPackedPairs).
func SgemmPackedPairsRoundedPlus(m int, alpha float32, a []float32, lda int, rounded []uint16, p *PackedPairs,
	beta float32, c []float32, ldc int, lr *LowRank) {
	if rounded == nil || !RoundedRows(p.k) || m <= 0 || alpha == 0 || (lr != nil && !lr.blocked(m, p.n)) {
		p.product(true, m, alpha, a, lda, beta, c, ldc, lr)
		return
	}
	checkMatrix("A", false, m, p.k, a, lda)
	checkMatrix("C", false, m, p.n, c, ldc)
	lr.check(m, p.n)
	if need := RoundedLen(m, p.k); len(rounded) < need {
		panic(fmt.Sprintf("linalg.SgemmPackedPairsRounded: %d rounded values, %d rows of %d need %d", len(rounded), m, p.k, need))
	}
	pairProducts(true, m, p.n, p.k, alpha, a, lda, nil, 0, p, beta, c, ldc, rounded, lr, nil)
}

// LowRank is a term C += Alpha·U·op(V) of small rank that a product with packed weights (PackedPairs,
// PackedBF16) adds to each block of C right after writing it, while the block is in cache: a LoRA adapter's
// y += s·u·Bᵀ beside the base's x·Wᵀ (V = B, n × Rank, TransV), or its dx += du·A beside dy·W (V = A,
// Rank × n). As a product of its own the term read all of C back from memory and wrote it again, a pass over
// every projection's output that took 5% of an RL step's CPU at SmolLM2-135M's shape on a Zen 5 EPYC. Its
// sums are Sgemm's for the term (beta 1), bit for bit: the blocked kernel's tiles over one block of Rank where
// Sgemm would use them (LowRank.blocked: a pass of more than 64 rows), Sgemm itself after the product
// elsewhere.
type LowRank struct {
	Rank   int
	Alpha  float32
	U      []float32 // m × Rank, stride LDU
	LDU    int
	V      []float32 // n × Rank (TransV) or Rank × n, stride LDV
	LDV    int
	TransV bool
}

// check panics, as Sgemm would, where the term's slices cannot hold m × Rank and op(V) Rank × n (nil: no term).
func (lr *LowRank) check(m, n int) {
	if lr == nil {
		return
	}
	checkMatrix("U", false, m, lr.Rank, lr.U, lr.LDU)
	checkMatrix("V", lr.TransV, lr.Rank, n, lr.V, lr.LDV)
}

// blocked reports whether Sgemm gives the term the blocked kernel for an m × n C, in one block of the
// kernel's contraction (sgemmGo: past its few-row, dot and naive paths; the skinny kernels take no term with
// beta 1), so that the tiles added as the product goes match it bit for bit.
func (lr *LowRank) blocked(m, n int) bool {
	return m > 64 && n > 16 && m*n*lr.Rank >= smallMACs && kernelFor(n).kc(lr.Rank) >= lr.Rank
}

// Add adds the term (none when lr is nil) to the m × n C with Sgemm, as a product of its own: after a product
// whose blocks of C are not the blocked kernel's (few rows, no packed weights).
func (lr *LowRank) Add(m, n int, c []float32, ldc int) {
	if lr == nil {
		return
	}
	Sgemm(false, lr.TransV, m, n, lr.Rank, lr.Alpha, lr.U, lr.LDU, lr.V, lr.LDV, 1, c, ldc)
}

// tiles lays the term out for a driver that adds it tile by tile, U from row 0: nil without a term, or where
// Sgemm would not give it the blocked kernel (finish then adds it after the product: Add).
func (lr *LowRank) tiles(m, n int) *lowRankTiles {
	if lr == nil || !lr.blocked(m, n) {
		return nil
	}
	t := newLowRankTiles(lr, n)
	t.packRows(0, m)
	return t
}

// finish ends a product that took the term as tiles (low) or not: its buffers back, or the term added now.
func (lr *LowRank) finish(low *lowRankTiles, m, n int, c []float32, ldc int) {
	if low != nil {
		low.release()
		return
	}
	lr.Add(m, n, c, ldc)
}

// lowRankTiles is a LowRank term laid out for the blocked kernel that Sgemm would give it: op(V) in panels of
// the kernel's nr columns once per product, U in panels of its mr rows one chunk of the product's rows at a
// time (before the workers take the chunk's panels, which then only read it).
type lowRankTiles struct {
	lr       *LowRank
	kern     *microKernel
	vp, up   *[]float32
	chunkRow int // the first row of the chunk up holds
}

func newLowRankTiles(lr *LowRank, n int) *lowRankTiles {
	kern := kernelFor(n)
	nr, r := kern.nr, lr.Rank
	panels := (n + nr - 1) / nr
	t := &lowRankTiles{lr: lr, kern: kern, vp: getScratch(panels * nr * r), up: getScratch(0)}
	for jp := range panels {
		kern.packBPanel((*t.vp)[jp*r*nr:], lr.V, lr.LDV, lr.TransV, 0, r, jp*nr, min(nr, n-jp*nr))
	}
	return t
}

// packRows lays out U's rows i0 .. i0+rows-1 in panels of mr rows.
func (t *lowRankTiles) packRows(i0, rows int) {
	mr, r := t.kern.mr, t.lr.Rank
	panels := (rows + mr - 1) / mr
	*t.up = grow(*t.up, panels*mr*r)
	for ip := range panels {
		t.kern.packAPanel((*t.up)[ip*mr*r:], t.lr.U, t.lr.LDU, false, i0+ip*mr, min(mr, rows-ip*mr), 0, r)
	}
	t.chunkRow = i0
}

// addRows adds the term to C's block of the packed rows r0 .. r1-1 (r0 a multiple of the kernel's mr, r1
// at most the rows packed) and columns j0 .. j0+cols-1; j0 is a multiple of the kernel's nr.
func (t *lowRankTiles) addRows(c []float32, ldc, r0, r1, j0, cols int) {
	mr, nr := t.kern.mr, t.kern.nr
	for jj := j0; jj < j0+cols; jj += nr {
		for i := r0; i < r1; i += mr {
			t.tile(c, ldc, i, min(mr, r1-i), jj, min(nr, j0+cols-jj))
		}
	}
}

// tile adds the term to one tile of C: rows i .. i+rows-1 of the packed ones (i a multiple of mr, rows ≤ mr),
// columns jj .. jj+cols-1 (jj a multiple of nr, cols ≤ nr).
func (t *lowRankTiles) tile(c []float32, ldc, i, rows, jj, cols int) {
	r, nr := t.lr.Rank, t.kern.nr
	t.kern.tile(r, (*t.up)[i*r:], (*t.vp)[jj/nr*r*nr:], c[(t.chunkRow+i)*ldc+jj:], ldc, t.lr.Alpha, 1, rows, cols)
}

// packGroups lays out U's rows from chunkRow for sgemmRowGroups' groups of rows: group g (size(g) rows, at
// most the kernel's mr) in panel g.
func (t *lowRankTiles) packGroups(groups int, size func(g int) int) {
	mr, r := t.kern.mr, t.lr.Rank
	*t.up = grow(*t.up, groups*mr*r)
	for g, i := 0, t.chunkRow; g < groups; g++ {
		t.kern.packAPanel((*t.up)[g*mr*r:], t.lr.U, t.lr.LDU, false, i, size(g), 0, r)
		i += size(g)
	}
}

// groupTile adds the term to the tile of C (ldc; its row 0 is U's row chunkRow) of group g (packGroups):
// rows i .. i+rows-1, the nr columns from j0.
func (t *lowRankTiles) groupTile(c []float32, ldc, g, i, rows, j0 int) {
	r, mr, nr := t.lr.Rank, t.kern.mr, t.kern.nr
	t.kern.tile(r, (*t.up)[g*mr*r:], (*t.vp)[j0/nr*r*nr:], c[i*ldc+j0:], ldc, t.lr.Alpha, 1, rows, nr)
}

func (t *lowRankTiles) release() {
	putScratch(t.vp)
	putScratch(t.up)
}
