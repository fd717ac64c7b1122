// Command asmgen writes engine/linalg's generated kernels with avo: register tiles for rows of float32
// activations times bfloat16 weights, and the blocked AVX2 kernel's tiles for fewer than 6 rows
// (tiles_bf16_amd64.s and its Go declarations):
//
//	cd engine/linalg/_asmgen && go run . -out ../tiles_bf16_amd64.s -stubs ../tiles_bf16_stubs_amd64.go -pkg linalg \
//		-dotout ../tiles_bf16dot_amd64.s -dotstubs ../tiles_bf16dot_stubs_amd64.go \
//		-amxout ../amx_amd64.s -amxstubs ../amx_stubs_amd64.go \
//		-skinnyout ../skinny_amd64.s -skinnystubs ../skinny_stubs_amd64.go
//
// It is a module of its own so that the project does not depend on avo; its output is committed.
package main

import (
	"fmt"
	"os"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// nr is the rows of B (outputs) one tile computes.
const nr = 4

// isa is one instruction set's form of the tiles: its vector width and how many rows of A a tile takes at
// most (the accumulators, the rows of A and one row of B fill the register file: 4·4 + 4 + 1 of the 32 zmm
// registers, 3·4 + 3 + 1 of the 16 ymm).
type isa struct {
	name  string
	lanes int
	maxMR int
	vec   func() reg.VecVirtual
}

func main() {
	ConstraintExpr("amd64")
	for _, is := range []isa{{"AVX512", 16, 4, ZMM}, {"AVX2", 8, 3, YMM}} {
		for mr := 1; mr <= is.maxMR; mr++ {
			tile(is, mr)
		}
	}
	roundBF16()
	rowTiles()
	panelTiles()
	packA6()
	copyGroups()
	widenT8()
	widenTPanel()
	gatherTPanel()
	packBT16()
	dotShift()
	scaleMul()
	mulShift()
	normBack()
	rotateHalf()
	mulProd()
	swigluGrad()
	packPairs()
	pairBlocksN()
	prefetchL2()
	attendScores()
	attendWeigh()
	fmaPeaks()
	Generate()
	for _, write := range []func() error{writeDotTiles, writeAMX, writeSkinny} {
		if err := write(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// tile writes dotTile<mr>x4BF16<isa>: out[i*4+j] = Σ_{p<k} a[i*lda+p]·float32(b[j*ldb+p]) for i < mr, j < 4,
// with k a multiple of the lanes. Each of the mr·4 dot products accumulates a vector of lanes in its own
// register; a step loads mr rows of A, widens 4 rows of B (bfloat16 is the top half of a float32:
// zero-extend to 32 bits, shift left 16) and issues mr·4 FMAs, so the FMA units, not the loads, bound it.
// The lanes are summed once at the end.
func tile(is isa, mr int) {
	name := fmt.Sprintf("dotTile%dx%dBF16%s", mr, nr, is.name)
	TEXT(name, NOSPLIT, "func(k int, a *float32, lda int, b *uint16, ldb int, out *float32)")
	Doc(fmt.Sprintf("%s sets out[i*%d+j] to the dot product of row i of A (float32, stride lda) and row j of B",
		name, nr),
		fmt.Sprintf("(bfloat16, stride ldb) over k values, a multiple of %d, for i < %d and j < %d.", is.lanes, mr, nr))
	k := Load(Param("k"), GP64())
	a := Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	out := Load(Param("out"), GP64())

	SHLQ(Imm(2), lda) // bytes
	SHLQ(Imm(1), ldb)
	arow := make([]reg.GPVirtual, mr)
	for i := range arow {
		arow[i] = GP64()
		if i == 0 {
			MOVQ(a, arow[i])
		} else {
			LEAQ(Mem{Base: arow[i-1], Index: lda, Scale: 1}, arow[i])
		}
	}
	brow := make([]reg.GPVirtual, nr)
	for j := range brow {
		brow[j] = GP64()
		if j == 0 {
			MOVQ(b, brow[j])
		} else {
			LEAQ(Mem{Base: brow[j-1], Index: ldb, Scale: 1}, brow[j])
		}
	}
	acc := make([][]reg.VecVirtual, mr)
	for i := range acc {
		acc[i] = make([]reg.VecVirtual, nr)
		for j := range acc[i] {
			acc[i][j] = is.vec()
			VXORPS(acc[i][j], acc[i][j], acc[i][j])
		}
	}
	// The next tile's rows of B follow this tile's when B is dense (ldb = k, as weights are stored):
	// prefetching them while this one is multiplied hides the memory latency that the first group of A's
	// rows would otherwise wait for at the start of every tile. (Elsewhere the prefetches fetch lines
	// nobody needs, and never fault.)
	next := GP64()
	LEAQ(Mem{Base: brow[nr-1], Index: ldb, Scale: 1}, next)
	p := GP64()
	XORQ(p, p)

	Label(name + "_loop")
	CMPQ(p, k)
	JGE(LabelRef(name + "_sum"))
	av := make([]reg.VecVirtual, mr)
	for i := range av {
		av[i] = is.vec()
		VMOVUPS(Mem{Base: arow[i], Index: p, Scale: 4}, av[i])
	}
	// A step consumes 2·lanes bytes of each of the 4 rows: the next tile's 4 rows advance 4 times as fast.
	for off := 0; off < 8*is.lanes; off += 64 {
		PREFETCHT0(Mem{Base: next, Index: p, Scale: 8, Disp: off})
	}
	for j := 0; j < nr; j++ {
		bv := is.vec()
		VPMOVZXWD(Mem{Base: brow[j], Index: p, Scale: 2}, bv)
		VPSLLD(Imm(16), bv, bv)
		for i := 0; i < mr; i++ {
			VFMADD231PS(av[i], bv, acc[i][j])
		}
	}
	ADDQ(Imm(uint64(is.lanes)), p)
	JMP(LabelRef(name + "_loop"))

	Label(name + "_sum")
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			var y reg.VecVirtual = acc[i][j]
			if is.lanes == 16 {
				hi := YMM()
				VEXTRACTF64X4(Imm(1), acc[i][j], hi)
				y = YMM()
				VADDPS(hi, acc[i][j].AsY(), y)
			}
			hx, x := XMM(), XMM()
			if is.lanes == 16 {
				VEXTRACTF32X4(Imm(1), y, hx) // y may be one of the upper 16 registers, which only EVEX reaches
			} else {
				VEXTRACTF128(Imm(1), y, hx)
			}
			VADDPS(hx, y.AsX(), x)
			t := XMM()
			VPERMILPS(Imm(0x4E), x, t) // swap the 64-bit halves
			VADDPS(t, x, x)
			VPERMILPS(Imm(0xB1), x, t) // swap neighbours
			VADDPS(t, x, x)
			VMOVSS(x, Mem{Base: out, Disp: 4 * (i*nr + j)})
		}
	}
	VZEROUPPER()
	RET()
}

// roundBF16 writes roundBF16AVX512: dst = src rounded to the nearest bfloat16, ties to even (the
// activations of a product with bfloat16 dot products), for n a multiple of 16. On the float32 bits:
// add 0x7FFF plus the lowest kept bit, keep the top 16. NaN is not preserved (activations are finite).
// Each 32 values of src go step bytes after the previous 32 in dst (64: one run), so the AMX tiles' layout
// of A, a block's rows interleaved step by step, is written in one call per row.
func roundBF16() {
	TEXT("roundBF16AVX512", NOSPLIT, "func(dst *uint16, src *float32, n int, step int)")
	Doc("roundBF16AVX512 sets dst to src[i] rounded to the nearest bfloat16 (ties to even) for i < n, a",
		"multiple of 16, value i at byte (i/32)·step + (i%32)·2 of dst; NaNs are not kept.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	step := Load(Param("step"), GP64())
	bias, one := ZMM(), ZMM()
	c := GP32()
	MOVL(U32(0x7FFF), c)
	VPBROADCASTD(c, bias)
	MOVL(U32(1), c)
	VPBROADCASTD(c, one)
	i := GP64()
	XORQ(i, i)
	Label("round_loop")
	CMPQ(i, n)
	JGE(LabelRef("round_done"))
	x, lsb := ZMM(), ZMM()
	VMOVDQU32(Mem{Base: src, Index: i, Scale: 4}, x)
	VPSRLD(Imm(16), x, lsb)
	VPANDD(one, lsb, lsb)
	VPADDD(bias, x, x)
	VPADDD(lsb, x, x)
	VPSRLD(Imm(16), x, x)
	// The second 16 values of each 32 go 32 bytes after the first; then dst moves on by step.
	half := GP64()
	MOVQ(i, half)
	ANDQ(Imm(16), half)
	VPMOVDW(x, Mem{Base: dst, Index: half, Scale: 2})
	ADDQ(Imm(16), i)
	TESTQ(half, half)
	JZ(LabelRef("round_loop"))
	ADDQ(step, dst)
	JMP(LabelRef("round_loop"))
	Label("round_done")
	VZEROUPPER()
	RET()
}
