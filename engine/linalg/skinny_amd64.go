//go:build amd64

package linalg

import (
	"sync"

	"golang.org/x/sys/cpu"
)

func init() {
	switch {
	case hasAVX512():
		skinny = skinnyAVX512.product
		outers, multT = skinnyAVX512.sharedOuters, skinnyAVX512.sharedTs
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		skinny = skinnyAVX2.product
		outers, multT = skinnyAVX2.sharedOuters, skinnyAVX2.sharedTs
	}
}

// Skinny products: an adapter's rank r (8 or 16) on one side, a micro-batch's tokens on the other (see
// _asmgen/skinny.go). Four forms of a LoRA layer's training pass reach them:
//
//	u = x·Aᵀ, du = s·dy·B       C = alpha·X·M for C with r columns (skinnyRows; Aᵀ is transposed first)
//	dA += duᵀ·x                 C += alpha·Uᵀ·X for C with r rows (skinnyOuter)
//	dB += s·dyᵀ·u               the same for Cᵀ, then added to C transposed
//
// The remaining two, y += s·u·Bᵀ and dx += du·A (k = r), go on the blocked kernel's tiles inside the base's
// product, on each block of C it has just written (LowRank).

// skinnyMinRows is the fewest rows (tokens) a skinny product takes: below it the few-row kernels and the
// blocked kernel, whose packing is then small, serve as before.
const skinnyMinRows = 64

// skinnyKernels is one instruction set's skinny kernels: rows on 8 rows of C and at most rowsWidth columns
// (the first cols), sweep on 8-row blocks of C in strips of sweepWidth columns.
type skinnyKernels struct {
	rowsWidth int
	rows      func(k int, x *float32, ldx int, m *float32, ldm int, c *float32, ldc int, cols int, alpha float32)
	// sweep takes the outer products (see sweepProducts); its mask is sweepWidth lanes of laneMasks.
	sweepWidth int
	sweep      func(rows int, u *float32, ldu int, x *float32, ldx int, acc *float32, strips int, mask *int32, pf int, c *float32, ldc int, flags int, alpha float32)
}

var (
	// AVX-512: 8 × 16 (8 × 8 in ymm registers for r ≤ 8) blocks for the rows, 16-column strips for the
	// sweep, the columns under a k-mask.
	skinnyAVX512 = skinnyKernels{
		rowsWidth: 16,
		rows: func(k int, x *float32, ldx int, m *float32, ldm int, c *float32, ldc int, cols int, alpha float32) {
			if cols <= 8 {
				skinnyRows8x8AVX512(k, x, ldx, m, ldm, c, ldc, 1<<cols-1, alpha)
				return
			}
			skinnyRows8x16AVX512(k, x, ldx, m, ldm, c, ldc, 1<<cols-1, alpha)
		},
		sweepWidth: 16,
		sweep:      skinnyOuterSweep8x16AVX512,
	}
	// AVX2: 8 × 8 blocks in 8 ymm accumulators, the columns under a lane mask; rank 16 is two blocks wide.
	skinnyAVX2 = skinnyKernels{
		rowsWidth: 8,
		rows: func(k int, x *float32, ldx int, m *float32, ldm int, c *float32, ldc int, cols int, alpha float32) {
			skinnyRows8x8AVX2(k, x, ldx, m, ldm, c, ldc, lanes(cols), alpha)
		},
		sweepWidth: 8,
		sweep:      skinnyOuterSweep8x8AVX2,
	}
)

// laneMasks[16-cols:] begins with the lanes of the first cols ≤ 16 columns (−1) and goes on with 16 zeros:
// the kernels' masks of 8 (AVX2) or 16 (AVX-512) lanes.
var laneMasks = [32]int32{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}

// lanes is the mask of the first cols lanes.
func lanes(cols int) *int32 { return &laneMasks[16-cols] }

// product computes the product on the skinny kernels and reports true when it has one of their forms.
func (sk *skinnyKernels) product(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) bool {
	switch {
	case !transA && n <= 16 && m >= skinnyMinRows && k >= 32 && beta == 0:
		mat, ldm := b, ldb
		if transB { // M = Bᵀ, k × n
			var buf *[]float32
			mat, buf = skinnyBuffer(k * n)
			defer skinnyScratch.Put(buf)
			ldm = n
			transposeInto(mat, n, b, ldb, n, k)
		}
		sk.rowsProducts(m, k, a, lda, []rowsPart{{n: n, alpha: alpha, mat: mat, ldm: ldm, c: c, ldc: ldc}})
		return true
	case transA && !transB && m%8 == 0 && m <= 16 && n >= 32 && k >= skinnyMinRows:
		scaleMatrix(m, n, beta, c, ldc)
		sk.outerProduct(m, n, k, alpha, a, lda, b, ldb, c, ldc)
		return true
	case transA && !transB && n%8 == 0 && n <= 16 && m >= 32 && k >= skinnyMinRows:
		t, buf := skinnyBuffer(n * m)
		defer skinnyScratch.Put(buf)
		clear(t)
		sk.outerProduct(n, m, k, 1, b, ldb, a, lda, t, m) // Cᵀ = Bᵀ·A
		for i := 0; i < m; i++ {
			ci := c[i*ldc : i*ldc+n]
			for j := range ci {
				if beta == 0 {
					ci[j] = alpha * t[j*m+i]
				} else {
					ci[j] = beta*ci[j] + alpha*t[j*m+i]
				}
			}
		}
		return true
	}
	return false
}

var skinnyScratch = sync.Pool{New: func() any { return new([]float32) }}

// skinnyBuffer returns n values of scratch from skinnyScratch, and the buffer to put back when done.
func skinnyBuffer(n int) ([]float32, *[]float32) {
	buf := skinnyScratch.Get().(*[]float32)
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n], buf
}

// transposeInto sets dst[p*ldd+j] = b[j*ldb+p] for the rows j < rows of B and p < k: B's rows as columns,
// eight of them at a time where k allows (1,536 rows of 8 in 4.0 µs against 8–9 a value at a time, Zen 4).
func transposeInto(dst []float32, ldd int, b []float32, ldb, rows, k int) {
	if rows == 0 {
		return
	}
	p0 := 0
	for ; p0+8 <= k; p0 += 8 {
		transposeEight(dst[p0*ldd:], ldd, b[p0:], ldb, rows)
	}
	for j := 0; j < rows && p0 < k; j++ {
		for p, v := range b[j*ldb+p0 : j*ldb+k] {
			dst[(p0+p)*ldd+j] = v
		}
	}
}

// transposeEight is transposeInto for B's first 8 columns: the eight destination rows sliced once, so that
// a store is not checked against its row's bounds on its own.
func transposeEight(dst []float32, ldd int, b []float32, ldb, rows int) {
	d0, d1, d2, d3 := dst[:rows], dst[ldd:ldd+rows], dst[2*ldd:2*ldd+rows], dst[3*ldd:3*ldd+rows]
	d4, d5, d6, d7 := dst[4*ldd:4*ldd+rows], dst[5*ldd:5*ldd+rows], dst[6*ldd:6*ldd+rows], dst[7*ldd:7*ldd+rows]
	for j, off := 0, 0; j < rows; j, off = j+1, off+ldb {
		s := b[off : off+8 : off+8]
		d0[j], d1[j], d2[j], d3[j] = s[0], s[1], s[2], s[3]
		d4[j], d5[j], d6[j], d7[j] = s[4], s[5], s[6], s[7]
	}
}

// rowsPart is one product of rowsProducts: C (m × n, n ≤ 16) = alpha·X·M.
type rowsPart struct {
	n     int
	alpha float32
	mat   []float32
	ldm   int
	c     []float32
	ldc   int
}

// rowsProducts sets the first m − m mod 8 rows of each part's C to alpha·X·M, 8 rows a call (two calls of 8
// columns each on AVX2 for n > 8), a block of X's rows through every part before the next (it stays in
// L1), split among the workers by runs of 64 rows.
func (sk *skinnyKernels) rowsProducts(m, k int, x []float32, ldx int, parts []rowsPart) {
	blocks := m / 8
	const run = 8 // blocks per claim
	n := 0
	for _, p := range parts {
		n += p.n
	}
	workers, release := acquireWorkers(m, n, k)
	defer release()
	parallelFor(workers, (blocks+run-1)/run, func(_, i int) {
		for bl := i * run; bl < min(blocks, (i+1)*run); bl++ {
			r := 8 * bl
			for _, p := range parts {
				for j0 := 0; j0 < p.n; j0 += sk.rowsWidth {
					sk.rows(k, &x[r*ldx], ldx, &p.mat[j0], p.ldm, &p.c[r*p.ldc+j0], p.ldc, min(sk.rowsWidth, p.n-j0), p.alpha)
				}
			}
		}
	})
	// The last m mod 8 rows as any few rows (M as a plain matrix now).
	if r := m % 8; r > 0 {
		m0 := m - r
		for _, p := range parts {
			sgemmGo(false, false, r, p.n, k, p.alpha, x[m0*ldx:], ldx, p.mat, p.ldm, 0, p.c[m0*p.ldc:], p.ldc)
		}
	}
}

// sharedTs takes MulTParts' products on the skinny kernels when every part is one that Sgemm would hand them
// (skinny's first form) and reports whether it did: each part's B transposed into one matrix, whose columns
// the parts then take in turn for each block of X's rows.
func (sk *skinnyKernels) sharedTs(m, k int, x []float32, ldx int, parts []TPart) bool {
	if m <= 64 || k < 32 {
		return false
	}
	n := 0
	for _, p := range parts {
		if p.Cols < 2 || p.Cols > 16 || openblasGemm != nil && m*p.Cols*k >= openblasMinMACs {
			return false
		}
		n += p.Cols
	}
	mat, buf := skinnyBuffer(k * n)
	defer skinnyScratch.Put(buf)
	rp := make([]rowsPart, len(parts))
	off := 0
	for i, p := range parts {
		transposeInto(mat[off:], n, p.B, p.LDB, p.Cols, k)
		rp[i] = rowsPart{n: p.Cols, alpha: 1, mat: mat[off:], ldm: n, c: p.C, ldc: p.LDC}
		off += p.Cols
	}
	sk.rowsProducts(m, k, x, ldx, rp)
	return true
}

// outerProduct adds alpha·Uᵀ·X to C (m × n, m a multiple of 8): U is k × m (stride ldu), X k × n (stride
// ldx), on the sweep kernel.
func (sk *skinnyKernels) outerProduct(m, n, k int, alpha float32, u []float32, ldu int, x []float32, ldx int, c []float32, ldc int) {
	sk.sweepProducts(n, k, x, ldx, []OuterPart{{Rows: m, Alpha: alpha, U: u, LDU: ldu, C: c, LDC: ldc}})
}

// sweepRows is how many rows of X a sweep kernel call takes: the block its strips cross while the next
// block's rows are prefetched.
const sweepRows = 32

// sweepProducts is outerProduct on the sweep kernel, for several products that share X (AddOuters): each
// worker's unit is a run of X's strips (sweepWidth columns each), taken a block of sweepRows rows of X at a
// time, and within a block every 8-row block of every part's C, so that X is read once, along its rows,
// rather than down one strip of columns at its row stride and once per block of C. The accumulators wait in acc between blocks;
// every element of C still sums its k products in order from zero, then takes alpha·sum + C in one FMA, as
// whatever unit holds it.
func (sk *skinnyKernels) sweepProducts(n, k int, x []float32, ldx int, parts []OuterPart) {
	_ = x[(k-1)*ldx+n-1]
	width := sk.sweepWidth
	strips, full := (n+width-1)/width, n/width
	offs := make([]int, len(parts)+1) // each part's accumulators in acc
	rows := 0
	for i, p := range parts {
		_, _ = p.U[(k-1)*p.LDU+p.Rows-1], p.C[(p.Rows-1)*p.LDC+n-1]
		offs[i+1] = offs[i] + p.Rows*strips*width
		rows += p.Rows
	}
	acc, buf := skinnyBuffer(offs[len(parts)])
	defer skinnyScratch.Put(buf)
	workers, release := acquireWorkers(rows, n, k)
	defer release()
	per := max(4, (strips+4*workers-1)/(4*workers)) // strips a unit: about four units a worker
	pf := sweepRows * ldx * 4
	parallelFor(workers, (strips+per-1)/per, func(_, i int) {
		s0 := per * i
		s1 := min(strips, s0+per)
		fullEnd := min(s1, full)
		for t0 := 0; t0 < k; t0 += sweepRows {
			rows, flags := min(sweepRows, k-t0), 0
			if t0 == 0 {
				flags |= 1
			}
			if t0+rows == k {
				flags |= 2
			}
			for pi, p := range parts {
				for jb := 0; jb < p.Rows/8; jb++ {
					ut, a := &p.U[t0*p.LDU+8*jb], acc[offs[pi]+jb*strips*8*width:]
					if fullEnd > s0 {
						sk.sweep(rows, ut, p.LDU, &x[t0*ldx+width*s0], ldx, &a[s0*8*width], fullEnd-s0, lanes(width), pf,
							&p.C[8*jb*p.LDC+width*s0], p.LDC, flags, p.Alpha)
					}
					if s1 > fullEnd { // the last strip, n mod width columns
						sk.sweep(rows, ut, p.LDU, &x[t0*ldx+width*full], ldx, &a[full*8*width], 1, lanes(n-width*full), pf,
							&p.C[8*jb*p.LDC+width*full], p.LDC, flags, p.Alpha)
					}
				}
			}
		}
	})
}

// sharedOuters takes AddOuters' products on the sweep kernels when every part is one that Sgemm would hand
// them (skinny's second form) and reports whether it did.
func (sk *skinnyKernels) sharedOuters(k, n int, x []float32, ldx int, parts []OuterPart) bool {
	if n < 32 || k < skinnyMinRows {
		return false
	}
	for _, p := range parts {
		if p.Rows%8 != 0 || p.Rows > 16 || p.Alpha == 0 || openblasGemm != nil && p.Rows*n*k >= openblasMinMACs {
			return false
		}
	}
	sk.sweepProducts(n, k, x, ldx, parts)
	return true
}
