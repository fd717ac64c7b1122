package main

import (
	"fmt"
	"math/bits"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// rowTiles writes tile<mr>x16AVX2 for mr = 1..6: the blocked AVX2 kernel's 6×16 tile, C = alpha·Ap·Bp +
// beta·C on the top mr rows, for Ap kc groups of 6 packed values of A and Bp kc groups of 16 of B. The full
// tile holds 12 ymm accumulators, two B vectors and a broadcast. Without the few-row tiles, a short row panel
// (the last of a product, or all of a decoding batch of fewer than 6 sequences) ran the 6-row kernel into a
// scratch tile and merged it into C in Go: 6/mr times the multiply-adds, and a Go loop per tile.
//
// Every row of C is summed in the same order whatever the tile's rows: one accumulator per row and half,
// k-step after k-step. A row's result then does not depend on where a product's row panels cut, so one
// step over a batch and the same step in shards compute the same activations and gradients for a sequence
// (TestShardedStepMatchesOneStep). Tiles of 1 or 2 rows once kept a second set of accumulators for the odd
// k-steps, to have at least 4 FMA chains in flight, and summed in another order; they are only a product's
// last row panel, so the lost overlap costs little.
//
// tile<mr>x16BF16AVX2 are the same tiles over a panel of bfloat16 values, PackedBF16's stored layout (kc groups
// of 16), widened in registers as the panel tiles do: x·Wᵀ on a frozen base then needs no float32 copy of
// W's panels, and its kc × nc block of them is half the bytes in L2.
func rowTiles() {
	for _, bf16 := range []bool{false, true} {
		for mr := 1; mr <= 6; mr++ {
			rowTile(mr, bf16)
		}
	}
}

// rowUnroll is the k-steps of one turn of a row tile's loop: 4 keeps the loop's counting to one add of each
// pointer, a subtraction and a branch per 48 FMAs at 6 rows.
const rowUnroll = 4

func rowTile(mr int, bf16 bool) {
	name, sig, bvals, bstep := fmt.Sprintf("tile%dx16AVX2", mr), "func(kc int, a, b, c *float32, ldc int, alpha, beta float32)", "", 64
	if bf16 {
		name, sig, bvals, bstep = fmt.Sprintf("tile%dx16BF16AVX2", mr), "func(kc int, a *float32, b *uint16, c *float32, ldc int, alpha, beta float32)", " bfloat16 values", 32
	}
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s sets the top %d rows of a 6×16 tile of C to alpha·Ap·Bp + beta·C (beta 0: C is not read),", name, mr),
		fmt.Sprintf("for Ap kc groups of 6 packed values of A (the first %d used) and Bp kc groups of 16%s.", mr, bvals))
	kc := Load(Param("kc"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	prefetchRows(mr, 64)
	var zero reg.VecVirtual
	if bf16 {
		zero = YMM()
		VXORPS(zero, zero, zero)
	}
	acc := make([][2]reg.VecVirtual, mr)
	for i := range acc {
		for h := range 2 {
			acc[i][h] = YMM()
			VXORPS(acc[i][h], acc[i][h], acc[i][h])
		}
	}
	step := func(ao, bo int) {
		b0, b1 := YMM(), YMM()
		if bf16 { // columns 0–3, 8–11 into b0 and 4–7, 12–15 into b1, as in panelTile
			VPUNPCKLWD(Mem{Base: b, Disp: bo}, zero, b0)
			VPUNPCKHWD(Mem{Base: b, Disp: bo}, zero, b1)
		} else {
			VMOVUPS(Mem{Base: b, Disp: bo}, b0)
			VMOVUPS(Mem{Base: b, Disp: bo + 32}, b1)
		}
		for i := range mr {
			x := YMM()
			VBROADCASTSS(Mem{Base: a, Disp: ao + 4*i}, x)
			VFMADD231PS(b0, x, acc[i][0])
			VFMADD231PS(b1, x, acc[i][1])
		}
	}
	Label(name + "_loop")
	CMPQ(kc, Imm(rowUnroll))
	JL(LabelRef(name + "_tail"))
	for u := range rowUnroll {
		step(24*u, bstep*u)
	}
	ADDQ(U32(24*rowUnroll), a)
	ADDQ(U32(bstep*rowUnroll), b)
	SUBQ(Imm(rowUnroll), kc)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_tail") // the last kc % rowUnroll k-steps
	TESTQ(kc, kc)
	JZ(LabelRef(name + "_store"))
	step(0, 0)
	ADDQ(Imm(24), a)
	ADDQ(Imm(uint64(bstep)), b)
	DECQ(kc)
	JMP(LabelRef(name + "_tail"))
	Label(name + "_store")
	if bf16 {
		interleavedHalves(acc, YMM)
	}
	storeRows(name, mr, acc, 40, YMM, 32)
}

// interleavedHalves puts the columns of rows accumulated over interleaved bfloat16 panels (0–3, 8–11 in the
// first vector, 4–7, 12–15 in the second) back in order, 0–7 and 8–15: the low halves together, then the high
// ones.
func interleavedHalves(acc [][2]reg.VecVirtual, vec func() reg.VecVirtual) {
	for i := range acc {
		lo := vec()
		VPERM2F128(Imm(0x20), acc[i][1], acc[i][0], lo)
		VPERM2F128(Imm(0x31), acc[i][1], acc[i][0], acc[i][1])
		acc[i][0] = lo
	}
}

// interleavedLanes is interleavedHalves for zmm accumulators: the interleave leaves columns 0–3, 8–11,
// 16–19 and 24–27 in acc[i][0] (one 128-bit lane each) and 4–7, 12–15, 20–23 and 28–31 in acc[i][1]; two
// VSHUFF32X4 gather each half's lanes of both (0–3, 8–11, 4–7, 12–15), a third puts them in order.
func interleavedLanes(acc [][2]reg.VecVirtual, vec func() reg.VecVirtual) {
	for i := range acc {
		lo, hi := vec(), vec()
		VSHUFF32X4(Imm(0x44), acc[i][1], acc[i][0], lo) // lanes 0, 1 of acc0, then lanes 0, 1 of acc1
		VSHUFF32X4(Imm(0xEE), acc[i][1], acc[i][0], hi) // lanes 2, 3 of each
		VSHUFF32X4(Imm(0xD8), lo, lo, acc[i][0])        // lanes 0, 2, 1, 3
		VSHUFF32X4(Imm(0xD8), hi, hi, acc[i][1])
	}
}

// prefetchRows fetches the lines of a tile's mr rows of C (row bytes wide, from the c and ldc arguments) into
// L1 before its loop: they are read (beta ≠ 0) or written after it, and C is far larger than L2, so each
// row would otherwise miss then, with nothing left to overlap the misses.
func prefetchRows(mr, bytes int) {
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(Imm(2), ldc)
	for i := range mr {
		PREFETCHT0(Mem{Base: c})
		PREFETCHT0(Mem{Base: c, Disp: bytes - 1})
		if i+1 < mr {
			ADDQ(ldc, c)
		}
	}
}

// panelTiles writes panel<mr>x16BF16AVX2 for mr = 1..6 and panel<mr>x32BF16AVX512 for mr = 1..11: C =
// alpha·A·P + beta·C for mr rows of A (float32, row-major, stride lda) and one packed panel P of bfloat16
// weights (k groups of 16 or 32 values, PackedBF16's layout for the ISA's kernel), widening P in registers.
// A decoding batch streams the weights and does few multiply-adds per byte: widening each panel into a
// buffer first and packing A, as the blocked kernel needs, cost more than the product for a few rows (2 rows
// of 1536 × 576: about twice the time of the row-major tiles), and even at 32 rows the widening pass was a
// sixth of the step. With 6 rows a step is 12 FMAs against 6 broadcasts and the widening, which compete for
// the FMAs' ports on AMD's Zen 3 (broadcasts, shuffles and shifts run on two of its four vector pipes, one of
// them an FMA pipe). So AVX2 widens by interleaving the panel's 16 values with zeros (`VPUNPCKLWD`,
// `VPUNPCKHWD`: bfloat16 is the top half of a float32), one operation per 8 values where zero-extending and
// shifting took two; the interleave works within 128-bit lanes, so the accumulators hold columns 0–3 and
// 8–11, then 4–7 and 12–15, and their halves are exchanged once, before the store (`VPERM2F128`). AVX-512
// widens the same way (one `VPUNPCKLWD`/`VPUNPCKHWD` per 16 values, where zero-extending and shifting took
// two, on ports an Intel core's FMAs use too; the lanes put in order by interleavedLanes): a decoding step's
// products with SmolLM2-135M's body at 32 rows 33.8–37.1 → 30.7–31.6 ms, at 64 rows 60.5–63.6 → 54.7–59.4
// (BenchmarkDecodeBody/packed, 3 interleaved runs on 2 cores of an Emerald Rapids Xeon), one sequence's
// decoding 0.44–0.47 → 0.39 s for 32 tokens (enginebench -work infer).
func panelTiles() {
	for _, is := range []panelISA{panelAVX2, panelAVX512} {
		for mr := 1; mr <= is.maxRows; mr++ {
			panelTile(is, mr, false, false)
		}
	}
	panelTile(panelAVX2, 6, true, false)
	panelTile(panelAVX2, 6, true, true)
}

// panelISA is one instruction set's form of the panel tiles: a panel is two vectors of float32 wide.
type panelISA struct {
	name string
	// interleave widens a step's two vectors with VPUNPCKLWD and VPUNPCKHWD against a zero register,
	// instead of VPMOVZXWD and VPSLLD; the accumulators' 128-bit lanes are then put in order before the store.
	interleave bool
	prefetchC  bool // fetch the tile's rows of C into L1 before the loop
	cols       int  // a panel's width: 2 vectors of cols/2 float32 values
	maxRows    int  // rows of A a tile takes at most: two accumulators per row fill the registers
	vec        func() reg.VecVirtual
	zero       func(v reg.VecVirtual)
	// prefetch are the offsets, from B's current pair of k-steps, fetched once per pair: 16 pairs ahead,
	// into the next panel near the end of this one (the panels of a run follow each other in memory).
	prefetch []int
}

var (
	panelAVX2 = panelISA{name: "AVX2", cols: 16, maxRows: 6, vec: YMM, interleave: true, prefetchC: true,
		zero: func(v reg.VecVirtual) { VXORPS(v, v, v) }, prefetch: []int{1024}}
	// 11 rows: two accumulators per row, the panel's two widened halves and a broadcast row would fit 14 in
	// the 32 zmm registers, but avo's allocator finds none past 11 (25 registers in the loop).
	panelAVX512 = panelISA{name: "AVX512", cols: 32, maxRows: 11, vec: ZMM, interleave: true,
		zero: func(v reg.VecVirtual) { VPXORD(v, v, v) }, prefetch: []int{2048, 2048 + 64}}
)

// With run, the tile (panels6x16BF16AVX2) takes n panels side by side: P's k groups of 16 after another
// (both the stored panels of a block and the gathered ones are laid out so) into C's next 16 columns each,
// its arguments advanced in its own frame between them. A training pass's products called it from Go once per
// 6 × 16 tile, a loop, a call through a function value and its bounds checks each time: 2–3% of an AVX2 RL
// step's CPU at SmolLM2-135M's shape, besides the kernels'.
//
// With plus as well (panels6x16BF16PlusAVX2), each tile then adds a low-rank term to the rows it has just
// written, as the blocked kernel's tile (tile6x16AVX2) over r k-steps of packed U (groups of 6) and V (groups
// of 16, the next panel's V after each tile's) with beta 1 would, in the same operations: C += lowAlpha·(U·V).
// The term added by a tile call of its own took 3% of that step's CPU for 1.4% of its multiply-adds, a call,
// a prologue and a pass over C per 6 × 16 tile.
func panelTile(is panelISA, mr int, run, plus bool) {
	name := fmt.Sprintf("panel%dx%dBF16%s", mr, is.cols, is.name)
	sig := "func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32)"
	switch {
	case plus:
		name = fmt.Sprintf("panels%dx%dBF16Plus%s", mr, is.cols, is.name)
		sig = "func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32, n int, r int, u, v *float32, lowAlpha float32)"
	case run:
		name = fmt.Sprintf("panels%dx%dBF16%s", mr, is.cols, is.name)
		sig = "func(k int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	if run {
		Doc(fmt.Sprintf("%s sets C = alpha·A·P + beta·C (beta 0: C is not read) for %d rows of A (stride lda) and", name, mr),
			fmt.Sprintf("n ≥ 1 panels P of k groups of %d bfloat16 values, one after another, into %d columns of C (stride", is.cols, is.cols),
			"ldc) each.")
	} else {
		Doc(fmt.Sprintf("%s sets C = alpha·A·P + beta·C (beta 0: C is not read) for %d rows of A (stride lda) and", name, mr),
			fmt.Sprintf("%d columns of C (stride ldc), P k groups of %d bfloat16 values.", is.cols, is.cols))
	}
	if plus {
		Doc("Each tile then adds lowAlpha·U·V to its rows, U r groups of 6 packed values and V r groups of 16 per panel",
			"(tile6x16AVX2's operands and operations, beta 1).")
	}
	if run {
		Label(name + "_panel")
	}
	half := is.cols / 2 // values of a widened vector
	k := Load(Param("k"), GP64())
	a := Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	b := Load(Param("b"), GP64())
	SHLQ(Imm(2), lda)
	arow := make([]reg.GPVirtual, mr)
	for i := range arow {
		arow[i] = GP64()
		if i == 0 {
			MOVQ(a, arow[i])
		} else {
			LEAQ(Mem{Base: arow[i-1], Index: lda, Scale: 1}, arow[i])
		}
	}
	if is.prefetchC {
		prefetchRows(mr, 4*is.cols)
	}
	sets := 1
	if mr < 3 {
		sets = 2
	}
	acc := make([][][2]reg.VecVirtual, sets)
	for s := range acc {
		acc[s] = make([][2]reg.VecVirtual, mr)
		for i := range acc[s] {
			for h := range 2 {
				acc[s][i][h] = is.vec()
				is.zero(acc[s][i][h])
			}
		}
	}
	var zero reg.VecVirtual
	if is.interleave {
		zero = is.vec()
		is.zero(zero)
	}
	q := GP64()
	XORQ(q, q)
	// Step u of a pair of k-values accumulates into set u % sets; pairs halve the loop's branches.
	step := func(u int) {
		s := u % sets
		b0, b1 := is.vec(), is.vec()
		if is.interleave {
			// Words 0–3 and 8–11 of the step's 16 (each 128-bit lane's low four) into b0, the rest into b1,
			// each below a zero word: the float32 values of columns 0–3, 8–11 and 4–7, 12–15.
			VPUNPCKLWD(Mem{Base: b, Disp: 2 * is.cols * u}, zero, b0)
			VPUNPCKHWD(Mem{Base: b, Disp: 2 * is.cols * u}, zero, b1)
		} else {
			VPMOVZXWD(Mem{Base: b, Disp: 2 * is.cols * u}, b0)
			VPMOVZXWD(Mem{Base: b, Disp: 2*is.cols*u + 2*half}, b1)
			VPSLLD(Imm(16), b0, b0)
			VPSLLD(Imm(16), b1, b1)
		}
		for i := range mr {
			x := is.vec()
			VBROADCASTSS(Mem{Base: arow[i], Index: q, Scale: 4, Disp: 4 * u}, x)
			VFMADD231PS(b0, x, acc[s][i][0])
			VFMADD231PS(b1, x, acc[s][i][1])
		}
	}
	last := GP64()
	MOVQ(k, last)
	SUBQ(Imm(1), last) // pairs while q < k-1
	Label(name + "_loop")
	CMPQ(q, last)
	JGE(LabelRef(name + "_tail"))
	for _, off := range is.prefetch {
		PREFETCHT0(Mem{Base: b, Disp: off})
	}
	step(0)
	step(1)
	ADDQ(Imm(2), q)
	ADDQ(Imm(uint64(4*is.cols)), b)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_tail")
	CMPQ(q, k)
	JGE(LabelRef(name + "_sum"))
	step(0)
	Label(name + "_sum")
	if sets == 2 {
		for i := range mr {
			for h := range 2 {
				VADDPS(acc[1][i][h], acc[0][i][h], acc[0][i][h])
			}
		}
	}
	if is.interleave && is.cols == 32 {
		interleavedLanes(acc[0], is.vec)
	} else if is.interleave {
		interleavedHalves(acc[0], is.vec)
	}
	switch {
	case plus:
		storeRowsThen(name, mr, acc[0], 48, is.vec, 4*half, name+"_term")
		lowRankTerm(name, mr, is.vec)
		nextPanel(name, is.cols, true)
	case run:
		storeRowsThen(name, mr, acc[0], 48, is.vec, 4*half, name+"_next")
		nextPanel(name, is.cols, false)
	default:
		storeRows(name, mr, acc[0], 48, is.vec, 4*half)
	}
}

// nextPanel ends a tile of a run of panels: with panels left, it advances b, c (and, with a term, v) in the
// frame and starts the next; else it returns.
func nextPanel(name string, cols int, plus bool) {
	Label(name + "_next")
	n := Load(Param("n"), GP64())
	DECQ(n)
	JZ(LabelRef(name + "_ret"))
	Store(n, Param("n"))
	b, k := Load(Param("b"), GP64()), Load(Param("k"), GP64())
	SHLQ(Imm(uint64(bits.TrailingZeros(uint(2*cols)))), k) // k groups of cols bfloat16 values
	ADDQ(k, b)
	Store(b, Param("b"))
	c := Load(Param("c"), GP64())
	ADDQ(Imm(uint64(4*cols)), c)
	Store(c, Param("c"))
	if plus {
		v, r := Load(Param("v"), GP64()), Load(Param("r"), GP64())
		SHLQ(Imm(uint64(bits.TrailingZeros(uint(4*cols)))), r) // r groups of cols float32 values
		ADDQ(r, v)
		Store(v, Param("v"))
	}
	JMP(LabelRef(name + "_panel"))
	Label(name + "_ret")
	VZEROUPPER()
	RET()
}

// lowRankTerm adds lowAlpha·U·V to mr rows of two vectors of C, as tile<mr>x16AVX2 with beta 1 does: one
// accumulator per row and half, summed r-step after r-step, then C = lowAlpha·acc + 1·C.
func lowRankTerm(name string, mr int, vec func() reg.VecVirtual) {
	Label(name + "_term")
	r := Load(Param("r"), GP64())
	u := Load(Param("u"), GP64())
	v := Load(Param("v"), GP64())
	acc := make([][2]reg.VecVirtual, mr)
	for i := range acc {
		for h := range 2 {
			acc[i][h] = vec()
			VXORPS(acc[i][h], acc[i][h], acc[i][h])
		}
	}
	Label(name + "_termloop")
	TESTQ(r, r)
	JZ(LabelRef(name + "_termstore"))
	b0, b1 := vec(), vec()
	VMOVUPS(Mem{Base: v}, b0)
	VMOVUPS(Mem{Base: v, Disp: 32}, b1)
	for i := range mr {
		x := vec()
		VBROADCASTSS(Mem{Base: u, Disp: 4 * i}, x)
		VFMADD231PS(b0, x, acc[i][0])
		VFMADD231PS(b1, x, acc[i][1])
	}
	ADDQ(Imm(uint64(4*mr)), u)
	ADDQ(Imm(64), v)
	DECQ(r)
	JMP(LabelRef(name + "_termloop"))
	Label(name + "_termstore")
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(Imm(2), ldc)
	alpha := vec()
	VBROADCASTSS(NewParamAddr("lowAlpha", 88), alpha)
	one, word := vec(), GP32()
	MOVL(U32(0x3f800000), word)
	VMOVD(word, one.AsX())
	VPBROADCASTD(one.AsX(), one)
	addRows(mr, acc, alpha, one, c, ldc, 32)
	JMP(LabelRef(name + "_next"))
}

// storeRows writes C = alpha·acc + beta·C for mr rows of two vectors (vec registers of width bytes; beta 0:
// C is not read) and returns; alpha is the float32 argument at byte offset alphaOff of the frame, beta the
// one after it.
func storeRows(name string, mr int, acc [][2]reg.VecVirtual, alphaOff int, vec func() reg.VecVirtual, width int) {
	storeRowsThen(name, mr, acc, alphaOff, vec, width, "")
}

// addRows writes C = alpha·acc + bv·C for mr rows of two vectors (width bytes each), from row on, ldc bytes
// apart (row is advanced): the order of storeRows' rounding, and of a term added with beta 1.
func addRows(mr int, acc [][2]reg.VecVirtual, alpha, bv reg.VecVirtual, row, ldc reg.Register, width int) {
	for i := range mr {
		for h := range 2 {
			VMULPS(alpha, acc[i][h], acc[i][h])
			VFMADD231PS(Mem{Base: row, Disp: width * h}, bv, acc[i][h])
			VMOVUPS(acc[i][h], Mem{Base: row, Disp: width * h})
		}
		if i+1 < mr {
			ADDQ(ldc, row)
		}
	}
}

// storeRowsThen is storeRows, continuing at label then (when not empty) instead of returning.
func storeRowsThen(name string, mr int, acc [][2]reg.VecVirtual, alphaOff int, vec func() reg.VecVirtual, width int, then string) {
	done := func() {
		if then != "" {
			JMP(LabelRef(then))
			return
		}
		VZEROUPPER()
		RET()
	}
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(Imm(2), ldc)
	alpha := vec()
	VBROADCASTSS(NewParamAddr("alpha", alphaOff), alpha)
	beta := GP32()
	MOVL(NewParamAddr("beta", alphaOff+4), beta)
	SHLL(Imm(1), beta) // drop the sign bit: -0 counts as zero too
	JZ(LabelRef(name + "_overwrite"))
	bv := vec()
	VBROADCASTSS(NewParamAddr("beta", alphaOff+4), bv)
	row := GP64()
	MOVQ(c, row)
	addRows(mr, acc, alpha, bv, row, ldc, width)
	done()
	Label(name + "_overwrite")
	for i := range mr {
		for h := range 2 {
			VMULPS(alpha, acc[i][h], acc[i][h])
			VMOVUPS(acc[i][h], Mem{Base: c, Disp: width * h})
		}
		if i+1 < mr {
			ADDQ(ldc, c)
		}
	}
	done()
}
