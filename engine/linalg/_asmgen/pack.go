package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// packA6 writes packA6AVX2: the AVX2 kernel's 6-row panel of a row-major A, 8 k-steps at a time. Each step
// loads 8 values from each of the 6 rows, transposes the 6×8 block in registers (as an 8×8 one whose last two
// rows are zero) and stores the 8 groups of 6 with overlapping 8-wide stores, each writing 2 zeros that the
// next overwrites; so the last store reaches 2 values past the chunk, and the caller leaves at least one
// more chunk's room (or packs the last chunk itself). Packing was a scalar loop, 12–17% of a LoRA step.
func packA6() {
	TEXT("packA6AVX2", NOSPLIT, "func(dst, src *float32, chunks, lda int)")
	Doc("packA6AVX2 packs chunks×8 k-steps of 6 rows of A (row stride lda) into dst as groups of 6 values, writing",
		"2 values past the last group.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	chunks := Load(Param("chunks"), GP64())
	lda := Load(Param("lda"), GP64())
	SHLQ(Imm(2), lda)
	rows := make([]reg.GPVirtual, 6)
	for i := range rows {
		rows[i] = GP64()
		if i == 0 {
			MOVQ(src, rows[i])
		} else {
			LEAQ(Mem{Base: rows[i-1], Index: lda, Scale: 1}, rows[i])
		}
	}
	zero := YMM()
	VXORPS(zero, zero, zero)
	off := GP64()
	XORQ(off, off)
	Label("packA6_loop")
	TESTQ(chunks, chunks)
	JZ(LabelRef("packA6_done"))
	r := make([]reg.VecVirtual, 6)
	for i := range r {
		r[i] = YMM()
		VMOVUPS(Mem{Base: rows[i], Index: off, Scale: 1}, r[i])
	}
	t := make([]reg.VecVirtual, 6)
	for i := 0; i < 6; i += 2 {
		t[i], t[i+1] = YMM(), YMM()
		VUNPCKLPS(r[i+1], r[i], t[i])
		VUNPCKHPS(r[i+1], r[i], t[i+1])
	}
	// s0..s3 from rows 0–3; s4..s7 from rows 4–5 and the zero rows 6–7.
	s := make([]reg.VecVirtual, 8)
	for i := range s {
		s[i] = YMM()
	}
	VSHUFPS(Imm(0x44), t[2], t[0], s[0])
	VSHUFPS(Imm(0xEE), t[2], t[0], s[1])
	VSHUFPS(Imm(0x44), t[3], t[1], s[2])
	VSHUFPS(Imm(0xEE), t[3], t[1], s[3])
	VSHUFPS(Imm(0x44), zero, t[4], s[4])
	VSHUFPS(Imm(0xEE), zero, t[4], s[5])
	VSHUFPS(Imm(0x44), zero, t[5], s[6])
	VSHUFPS(Imm(0xEE), zero, t[5], s[7])
	for col := 0; col < 8; col++ {
		o := YMM()
		lo, hi := s[col%4], s[col%4+4]
		if col < 4 {
			VPERM2F128(Imm(0x20), hi, lo, o)
		} else {
			VPERM2F128(Imm(0x31), hi, lo, o)
		}
		VMOVUPS(o, Mem{Base: dst, Disp: 24 * col})
	}
	ADDQ(Imm(32), off)
	ADDQ(Imm(192), dst)
	DECQ(chunks)
	JMP(LabelRef("packA6_loop"))
	Label("packA6_done")
	VZEROUPPER()
	RET()
}

// widenT8 writes widenT8x8BF16AVX2: an 8 × 8 block of bfloat16 values transposed and widened to float32,
// dst[t*ldd+c] = src[c*lds+t]. Each of the 8 source rows (8 values, 16 bytes) is zero-extended and shifted
// into the top half of 8 float32 lanes, and the block is transposed in registers as packA6AVX2 transposes
// its 6 × 8 one. SgemmPackedBF16N reads a PackedBF16 (stored for x·Wᵀ, 16 of W's rows per step of
// contraction values) along W's rows for dy·W; one value at a time that was 5% of an AVX2 training step.
func widenT8() {
	TEXT("widenT8x8BF16AVX2", NOSPLIT, "func(dst *float32, ldd int, src *uint16, lds int)")
	Doc("widenT8x8BF16AVX2 sets dst[t*ldd+c] to the float32 value of the bfloat16 src[c*lds+t], for t, c < 8.")
	dst := Load(Param("dst"), GP64())
	ldd := Load(Param("ldd"), GP64())
	src := Load(Param("src"), GP64())
	lds := Load(Param("lds"), GP64())
	SHLQ(Imm(2), ldd)
	SHLQ(Imm(1), lds)
	r := make([]reg.VecVirtual, 8)
	for i := range r {
		r[i] = YMM()
		VPMOVZXWD(Mem{Base: src}, r[i])
		VPSLLD(Imm(16), r[i], r[i])
		if i < 7 {
			ADDQ(lds, src)
		}
	}
	t := make([]reg.VecVirtual, 8)
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = YMM(), YMM()
		VUNPCKLPS(r[i+1], r[i], t[i])
		VUNPCKHPS(r[i+1], r[i], t[i+1])
	}
	// s[0..3]: columns 0–3 of rows 0–3 (each lane half: columns 0–3 or 4–7); s[4..7] the same of rows 4–7.
	s := make([]reg.VecVirtual, 8)
	for h := 0; h < 8; h += 4 {
		for i := range 4 {
			s[h+i] = YMM()
		}
		VSHUFPS(Imm(0x44), t[h+2], t[h], s[h])
		VSHUFPS(Imm(0xEE), t[h+2], t[h], s[h+1])
		VSHUFPS(Imm(0x44), t[h+3], t[h+1], s[h+2])
		VSHUFPS(Imm(0xEE), t[h+3], t[h+1], s[h+3])
	}
	for col := range 8 {
		o := YMM()
		lo, hi := s[col%4], s[col%4+4]
		if col < 4 {
			VPERM2F128(Imm(0x20), hi, lo, o)
		} else {
			VPERM2F128(Imm(0x31), hi, lo, o)
		}
		VMOVUPS(o, Mem{Base: dst})
		if col < 7 {
			ADDQ(ldd, dst)
		}
	}
	VZEROUPPER()
	RET()
}
