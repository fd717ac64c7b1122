// Command asmgen writes engine/linalg's register-tiled kernels for rows of float32 activations times
// bfloat16 weights (tiles_bf16_avx512_amd64.s and its Go declarations) with avo:
//
//	cd engine/linalg/_asmgen && go run . -out ../tiles_bf16_avx512_amd64.s -stubs ../tiles_bf16_avx512_stubs_amd64.go -pkg linalg
//
// It is a module of its own so that the project does not depend on avo; its output is committed.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// nr is the rows of B (outputs) one tile computes; the tiles come in 1 to 4 rows of A.
const nr = 4

func main() {
	ConstraintExpr("amd64")
	for mr := 1; mr <= 4; mr++ {
		tile(mr)
	}
	Generate()
}

// tile writes dotTile<mr>x4BF16: out[i*4+j] = Σ_{p<k} a[i*lda+p]·float32(b[j*ldb+p]) for i < mr, j < 4, with
// k a multiple of 16. Each of the mr·4 dot products accumulates 16 lanes in its own register; a step of 16
// values loads mr rows of A, widens 4 rows of B (bfloat16 is the top half of a float32: zero-extend to 32
// bits, shift left 16) and issues mr·4 FMAs, so the FMA units, not the loads, bound it. The lanes are summed
// once at the end.
func tile(mr int) {
	name := fmt.Sprintf("dotTile%dx%dBF16AVX512", mr, nr)
	TEXT(name, NOSPLIT, "func(k int, a *float32, lda int, b *uint16, ldb int, out *float32)")
	Doc(fmt.Sprintf("%s sets out[i*%d+j] to the dot product of row i of A (float32, stride lda) and row j of B",
		name, nr),
		fmt.Sprintf("(bfloat16, stride ldb) over k values, a multiple of 16, for i < %d and j < %d.", mr, nr))
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
			acc[i][j] = ZMM()
			VXORPS(acc[i][j], acc[i][j], acc[i][j])
		}
	}
	p := GP64()
	XORQ(p, p)

	Label(name + "_loop")
	CMPQ(p, k)
	JGE(LabelRef(name + "_sum"))
	av := make([]reg.VecVirtual, mr)
	for i := range av {
		av[i] = ZMM()
		VMOVUPS(Mem{Base: arow[i], Index: p, Scale: 4}, av[i])
	}
	for j := 0; j < nr; j++ {
		bv := ZMM()
		VPMOVZXWD(Mem{Base: brow[j], Index: p, Scale: 2}, bv)
		VPSLLD(Imm(16), bv, bv)
		for i := 0; i < mr; i++ {
			VFMADD231PS(av[i], bv, acc[i][j])
		}
	}
	ADDQ(Imm(16), p)
	JMP(LabelRef(name + "_loop"))

	Label(name + "_sum")
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			z := acc[i][j]
			hi, y := YMM(), YMM()
			VEXTRACTF64X4(Imm(1), z, hi)
			VADDPS(hi, z.AsY(), y)
			hx, x := XMM(), XMM()
			VEXTRACTF32X4(Imm(1), y, hx)
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
