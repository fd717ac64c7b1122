package linalg

// Band is the triangular shape of causal attention's products, from which SgemmBand skips multiply-adds
// whose results are zero or unused. Row i of op(A) (and of C) belongs to query position Off + i/Div (Div
// rows per position: the heads stacked as the model stacks a key/value head's group).
type Band struct {
	Kind     BandKind
	Off, Div int
}

// BandKind says which part of a product a Band leaves out.
type BandKind uint8

const (
	// NoBand: the whole product (Sgemm).
	NoBand BandKind = iota
	// BandCols: row i needs C's columns j ≤ Off + i/Div only (a query's scores against the keys it sees);
	// C's entries past them may be left unwritten.
	BandCols
	// BandKEnd: op(A)'s row i is zero at k > Off + i/Div (a query's weights past its own position), so its
	// contraction stops there.
	BandKEnd
	// BandKStart: op(A)'s row i is zero at k < Div·i + Off (a key's gradient terms from the queries before
	// it, op(A) being the weights transposed), so its contraction starts there.
	BandKStart
)

// SgemmBand is Sgemm for a product of band's shape: where it runs on the blocked kernels it leaves out the
// tiles of C that BandCols says are unused and the k-steps that BandKEnd and BandKStart say are zero, and
// computes the rest as Sgemm does, bit for bit (a k-step left out would only have added a zero product; a
// tile left out whole in the first block is beta·C, where the kernel would add alpha·0 to it: the same but
// for the sign of a zero).
// Causal attention by blocks of 64 query rows computed half as much again as it needed; with the bands only
// the tiles that cross the diagonal (14 rows by 32 columns on AVX-512) do more than they must.
func SgemmBand(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int, band Band) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if band.Kind == NoBand || band.Div < 1 || openblasGemm != nil {
		sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	sgemmGoBand(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &band)
}

// pos is the position of row i.
func (b *Band) pos(i int) int { return b.Off + i/b.Div }

// steps narrows a tile's contraction, k-steps [0, kc) of the block starting at p0, for its rows
// [i0, i0+rows) and columns from jj: the k-steps [lo, hi) it needs, or skip when the tile needs none (its
// columns all unused under BandCols; under the others, every k-step of the block zero).
func (b *Band) steps(i0, rows, jj, p0, kc int) (lo, hi int, skip bool) {
	lo, hi = 0, kc
	if b == nil {
		return lo, hi, false
	}
	switch b.Kind {
	case BandCols:
		return lo, hi, jj > b.pos(i0+rows-1)
	case BandKEnd:
		hi = min(kc, b.pos(i0+rows-1)+1-p0)
	case BandKStart:
		lo = max(0, b.Div*i0+b.Off-p0)
	}
	return lo, hi, hi <= lo
}
