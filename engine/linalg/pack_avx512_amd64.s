#include "textflag.h"

// rowIndex holds 0..15: multiplied by the row stride it gives the gather offsets of 16 consecutive rows.
DATA rowIndex<>+0(SB)/4, $0
DATA rowIndex<>+4(SB)/4, $1
DATA rowIndex<>+8(SB)/4, $2
DATA rowIndex<>+12(SB)/4, $3
DATA rowIndex<>+16(SB)/4, $4
DATA rowIndex<>+20(SB)/4, $5
DATA rowIndex<>+24(SB)/4, $6
DATA rowIndex<>+28(SB)/4, $7
DATA rowIndex<>+32(SB)/4, $8
DATA rowIndex<>+36(SB)/4, $9
DATA rowIndex<>+40(SB)/4, $10
DATA rowIndex<>+44(SB)/4, $11
DATA rowIndex<>+48(SB)/4, $12
DATA rowIndex<>+52(SB)/4, $13
DATA rowIndex<>+56(SB)/4, $14
DATA rowIndex<>+60(SB)/4, $15
GLOBL rowIndex<>(SB), RODATA|NOPTR, $64

// COLUMNS finishes the transpose for the four columns q, 4+q, 8+q, 12+q (q = off/56) from S(q), S(4+q),
// S(8+q), S(12+q) and stores each as one 14-float group at DI + column*56.
#define COLUMNS(a, b, c, d, off) \
	VSHUFF32X4 $0x44, b, a, Z16; \
	VSHUFF32X4 $0xEE, b, a, Z17; \
	VSHUFF32X4 $0x44, d, c, Z18; \
	VSHUFF32X4 $0xEE, d, c, Z19; \
	VSHUFF32X4 $0x88, Z18, Z16, Z20; \
	VSHUFF32X4 $0xDD, Z18, Z16, Z21; \
	VSHUFF32X4 $0x88, Z19, Z17, Z22; \
	VSHUFF32X4 $0xDD, Z19, Z17, Z23; \
	VMOVUPS Z20, K2, off(DI); \
	VMOVUPS Z21, K2, off+224(DI); \
	VMOVUPS Z22, K2, off+448(DI); \
	VMOVUPS Z23, K2, off+672(DI)

// func packA14AVX512(dst, src *float32, kc, rows, lda int, trans bool)
//
// Packs a rows×kc block of op(A) (rows ≤ 14) into kc groups of 14 floats, zero-filling rows past rows. src
// points at op(A)[i0, p0].
//   - Transposed, the 14 values of a group are contiguous in a: one masked load and store per group.
//   - Untransposed with a full panel, 16 groups at a time come from 14 contiguous row loads transposed in
//     registers (64 shuffles per 16 groups), which is several times faster than gathers.
//   - The remaining groups, and edge panels of fewer rows, are one masked gather each.
TEXT ·packA14AVX512(SB), NOSPLIT, $0-41
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ kc+16(FP), CX
	MOVQ rows+24(FP), R8
	MOVQ lda+32(FP), DX
	MOVL $0x3fff, R9
	KMOVW R9, K2 // the 14 lanes that are stored
	CMPB trans+40(FP), $0
	JNE transposed
	CMPQ R8, $14
	JNE gathers

	// Row r of the panel is at SI + r*ld with ld = lda*4 in R9; five bases cover rows 0..13 through the
	// scaled-index forms base + {0,1,2,4,8}*ld.
	MOVQ DX, R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R14 // 3*ld
	LEAQ (SI)(R14*1), R10 // rows 3, 4, 5, 7, 11
	LEAQ (R10)(R14*1), R11 // rows 6, 8, 10
	LEAQ (R11)(R14*1), R12 // row 9
	LEAQ (R12)(R14*1), R13 // rows 12, 13

block16:
	CMPQ CX, $16
	JLT gathers
	VMOVUPS (SI), Z0
	VMOVUPS (SI)(R9*1), Z1
	VMOVUPS (SI)(R9*2), Z2
	VMOVUPS (R10), Z3
	VMOVUPS (SI)(R9*4), Z4
	VMOVUPS (R10)(R9*2), Z5
	VMOVUPS (R11), Z6
	VMOVUPS (R10)(R9*4), Z7
	VMOVUPS (SI)(R9*8), Z8
	VMOVUPS (R12), Z9
	VMOVUPS (R11)(R9*4), Z10
	VMOVUPS (R10)(R9*8), Z11
	VMOVUPS (R13), Z12
	VMOVUPS (R13)(R9*1), Z13

	// T(2i), T(2i+1) = low and high interleaves of rows 2i and 2i+1 (Z16..Z29).
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29

	// S(4g+q) (Z0..Z15) holds, in each 128-bit lane l, column 4l+q of rows 4g..4g+3. Rows 14 and 15 do not
	// exist; their slots repeat rows 12 and 13 and are never stored.
	VUNPCKLPD Z18, Z16, Z0
	VUNPCKHPD Z18, Z16, Z1
	VUNPCKLPD Z19, Z17, Z2
	VUNPCKHPD Z19, Z17, Z3
	VUNPCKLPD Z22, Z20, Z4
	VUNPCKHPD Z22, Z20, Z5
	VUNPCKLPD Z23, Z21, Z6
	VUNPCKHPD Z23, Z21, Z7
	VUNPCKLPD Z26, Z24, Z8
	VUNPCKHPD Z26, Z24, Z9
	VUNPCKLPD Z27, Z25, Z10
	VUNPCKHPD Z27, Z25, Z11
	VUNPCKLPD Z28, Z28, Z12
	VUNPCKHPD Z28, Z28, Z13
	VUNPCKLPD Z29, Z29, Z14
	VUNPCKHPD Z29, Z29, Z15

	COLUMNS(Z0, Z4, Z8, Z12, 0)
	COLUMNS(Z1, Z5, Z9, Z13, 56)
	COLUMNS(Z2, Z6, Z10, Z14, 112)
	COLUMNS(Z3, Z7, Z11, Z15, 168)

	ADDQ $64, SI
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $896, DI
	SUBQ $16, CX
	JMP block16

gathers:
	TESTQ CX, CX
	JZ done
	MOVL $1, R9
	SHLXQ R8, R9, R8
	DECQ R8 // R8 = low `rows` bits set: the lanes that are read
	VPBROADCASTD DX, Z1
	VPMULLD rowIndex<>(SB), Z1, Z1 // Z1 = r*lda for r = 0..15

gather:
	KMOVW R8, K1
	VPXORD Z0, Z0, Z0
	VGATHERDPS (SI)(Z1*4), K1, Z0
	VMOVUPS Z0, K2, (DI)
	ADDQ $4, SI
	ADDQ $56, DI
	DECQ CX
	JNZ gather
	JMP done

transposed:
	TESTQ CX, CX
	JZ done
	MOVL $1, R9
	SHLXQ R8, R9, R8
	DECQ R8
	KMOVW R8, K1
	SHLQ $2, DX

	LEAQ (DX)(DX*4), R9
	SHLQ $2, R9 // 20 rows ahead: each row of a is its own cache line (and often its own page), which the
	            // hardware prefetchers do not follow

load:
	PREFETCHT0 (SI)(R9*1)
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS Z0, K2, (DI)
	ADDQ DX, SI
	ADDQ $56, DI
	DECQ CX
	JNZ load

done:
	VZEROUPPER
	RET

// func packABlockTAVX512(dst, src *float32, steps, rows, lda, kc int)
//
// Packs k-steps [0, steps) of the rows×kc block of op(A) = Aᵀ starting at src = &op(A)[i0, p] into
// ceil(rows/14) consecutive panels of kc groups of 14 floats, dst pointing at group 0 of the first panel
// (zero-filling rows past rows). It walks a row of a (one k-step for every panel) at a time, so the reads are
// contiguous and the hardware prefetchers keep up; packing panel by panel would instead touch one new cache
// line per k-step, each in a different page, and wait on memory for every one.
TEXT ·packABlockTAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ steps+16(FP), CX
	MOVQ kc+40(FP), R10
	IMULQ $56, R10 // bytes per packed panel
	MOVL $0x3fff, R9
	KMOVW R9, K2 // the 14 lanes stored
	KMOVW R9, K1 // the lanes read for a full panel
	MOVQ rows+24(FP), AX
	XORQ DX, DX
	MOVQ $14, R11
	DIVQ R11 // AX = full panels, DX = rows in the last, partial one
	MOVQ DX, R12
	MOVL $1, R9
	SHLXQ DX, R9, R9
	DECQ R9
	KMOVW R9, K3 // the lanes read for the partial panel
	MOVQ lda+32(FP), R11
	SHLQ $2, R11 // row stride of a in bytes
	TESTQ CX, CX
	JZ blockdone

blockrow:
	PREFETCHT0 (SI)(R11*4)
	MOVQ SI, BX // source: this row of a
	MOVQ DI, R13 // destination: this k-step of panel 0
	MOVQ AX, R14
	TESTQ R14, R14
	JZ blockpartial

blockpanel:
	VMOVUPS (BX), K1, Z0
	VMOVUPS Z0, K2, (R13)
	ADDQ $56, BX
	ADDQ R10, R13
	DECQ R14
	JNZ blockpanel

blockpartial:
	TESTQ R12, R12
	JZ blocknext
	VMOVUPS.Z (BX), K3, Z0
	VMOVUPS Z0, K2, (R13)

blocknext:
	ADDQ R11, SI
	ADDQ $56, DI
	DECQ CX
	JNZ blockrow

blockdone:
	VZEROUPPER
	RET
