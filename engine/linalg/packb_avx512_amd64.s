#include "textflag.h"

// columnIndex holds 0..15: multiplied by ldb it gives the gather offsets of 16 consecutive rows of b.
DATA columnIndex<>+0(SB)/4, $0
DATA columnIndex<>+4(SB)/4, $1
DATA columnIndex<>+8(SB)/4, $2
DATA columnIndex<>+12(SB)/4, $3
DATA columnIndex<>+16(SB)/4, $4
DATA columnIndex<>+20(SB)/4, $5
DATA columnIndex<>+24(SB)/4, $6
DATA columnIndex<>+28(SB)/4, $7
DATA columnIndex<>+32(SB)/4, $8
DATA columnIndex<>+36(SB)/4, $9
DATA columnIndex<>+40(SB)/4, $10
DATA columnIndex<>+44(SB)/4, $11
DATA columnIndex<>+48(SB)/4, $12
DATA columnIndex<>+52(SB)/4, $13
DATA columnIndex<>+56(SB)/4, $14
DATA columnIndex<>+60(SB)/4, $15
GLOBL columnIndex<>(SB), RODATA|NOPTR, $64

// LOAD16 loads 16 floats from each of the 16 rows base0 + r*ld (r = 0..15, four rows per base register;
// R9 = ld, R15 = 3*ld) into Z0..Z15.
#define LOAD16(b0, b1, b2, b3) \
	VMOVUPS (b0), Z0; \
	VMOVUPS (b0)(R9*1), Z1; \
	VMOVUPS (b0)(R9*2), Z2; \
	VMOVUPS (b0)(R15*1), Z3; \
	VMOVUPS (b1), Z4; \
	VMOVUPS (b1)(R9*1), Z5; \
	VMOVUPS (b1)(R9*2), Z6; \
	VMOVUPS (b1)(R15*1), Z7; \
	VMOVUPS (b2), Z8; \
	VMOVUPS (b2)(R9*1), Z9; \
	VMOVUPS (b2)(R9*2), Z10; \
	VMOVUPS (b2)(R15*1), Z11; \
	VMOVUPS (b3), Z12; \
	VMOVUPS (b3)(R9*1), Z13; \
	VMOVUPS (b3)(R9*2), Z14; \
	VMOVUPS (b3)(R15*1), Z15

// INTERLEAVE turns rows Z0..Z15 into S(4g+q) (Z0..Z15), which holds, in each 128-bit lane l, column 4l+q of
// rows 4g..4g+3, using Z16..Z31.
#define INTERLEAVE \
	VUNPCKLPS Z1, Z0, Z16; \
	VUNPCKHPS Z1, Z0, Z17; \
	VUNPCKLPS Z3, Z2, Z18; \
	VUNPCKHPS Z3, Z2, Z19; \
	VUNPCKLPS Z5, Z4, Z20; \
	VUNPCKHPS Z5, Z4, Z21; \
	VUNPCKLPS Z7, Z6, Z22; \
	VUNPCKHPS Z7, Z6, Z23; \
	VUNPCKLPS Z9, Z8, Z24; \
	VUNPCKHPS Z9, Z8, Z25; \
	VUNPCKLPS Z11, Z10, Z26; \
	VUNPCKHPS Z11, Z10, Z27; \
	VUNPCKLPS Z13, Z12, Z28; \
	VUNPCKHPS Z13, Z12, Z29; \
	VUNPCKLPS Z15, Z14, Z30; \
	VUNPCKHPS Z15, Z14, Z31; \
	VUNPCKLPD Z18, Z16, Z0; \
	VUNPCKHPD Z18, Z16, Z1; \
	VUNPCKLPD Z19, Z17, Z2; \
	VUNPCKHPD Z19, Z17, Z3; \
	VUNPCKLPD Z22, Z20, Z4; \
	VUNPCKHPD Z22, Z20, Z5; \
	VUNPCKLPD Z23, Z21, Z6; \
	VUNPCKHPD Z23, Z21, Z7; \
	VUNPCKLPD Z26, Z24, Z8; \
	VUNPCKHPD Z26, Z24, Z9; \
	VUNPCKLPD Z27, Z25, Z10; \
	VUNPCKHPD Z27, Z25, Z11; \
	VUNPCKLPD Z30, Z28, Z12; \
	VUNPCKHPD Z30, Z28, Z13; \
	VUNPCKLPD Z31, Z29, Z14; \
	VUNPCKHPD Z31, Z29, Z15

// COLUMNS finishes the transpose for columns q, 4+q, 8+q, 12+q (q = off/128) and stores each as 16 floats at
// DI + column*128 (+64 for the upper half of the panel, folded into off).
#define COLUMNS(a, b, c, d, off) \
	VSHUFF32X4 $0x44, b, a, Z16; \
	VSHUFF32X4 $0xEE, b, a, Z17; \
	VSHUFF32X4 $0x44, d, c, Z18; \
	VSHUFF32X4 $0xEE, d, c, Z19; \
	VSHUFF32X4 $0x88, Z18, Z16, Z20; \
	VSHUFF32X4 $0xDD, Z18, Z16, Z21; \
	VSHUFF32X4 $0x88, Z19, Z17, Z22; \
	VSHUFF32X4 $0xDD, Z19, Z17, Z23; \
	VMOVUPS Z20, off(DI); \
	VMOVUPS Z21, off+512(DI); \
	VMOVUPS Z22, off+1024(DI); \
	VMOVUPS Z23, off+1536(DI)

#define STORE16(half) \
	COLUMNS(Z0, Z4, Z8, Z12, half); \
	COLUMNS(Z1, Z5, Z9, Z13, half+128); \
	COLUMNS(Z2, Z6, Z10, Z14, half+256); \
	COLUMNS(Z3, Z7, Z11, Z15, half+384)

// func packB32AVX512(dst, src *float32, kc, cols, ldb int, trans bool)
//
// Packs a kc×cols block of op(B) (cols ≤ 32) into kc groups of 32 floats, zero-filling columns past cols.
// src points at op(B)[p0, j0].
//   - Untransposed, a group is (part of) a row of b: two masked loads and two stores.
//   - Transposed with a full panel, 16 groups at a time come from 32 contiguous row loads of b transposed in
//     registers as two 16×16 blocks.
//   - The remaining groups, and edge panels of fewer columns, are two masked gathers each.
TEXT ·packB32AVX512(SB), NOSPLIT, $0-41
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ kc+16(FP), CX
	MOVQ cols+24(FP), R8
	MOVQ ldb+32(FP), DX
	// K1, K2: the columns that exist in the lower and upper 16 of the group.
	MOVQ R8, R9
	CMPQ R9, $16
	JLE lowmask
	MOVQ $16, R9

lowmask:
	MOVL $1, R10
	SHLXQ R9, R10, R10
	DECQ R10
	KMOVW R10, K1
	MOVQ R8, R9
	SUBQ $16, R9
	JGE highmask
	XORQ R9, R9

highmask:
	MOVL $1, R10
	SHLXQ R9, R10, R10
	DECQ R10
	KMOVW R10, K2
	TESTQ CX, CX
	JZ done
	CMPB trans+40(FP), $0
	JNE transposed
	SHLQ $2, DX

rows:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z 64(SI), K2, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ DX, SI
	ADDQ $128, DI
	DECQ CX
	JNZ rows
	JMP done

transposed:
	CMPQ R8, $32
	JNE gathers
	MOVQ DX, R9
	SHLQ $2, R9 // ld in bytes
	LEAQ (R9)(R9*2), R15 // 3*ld
	MOVQ R9, R14
	SHLQ $2, R14 // 4*ld
	MOVQ SI, R10
	LEAQ (R10)(R14*1), R11
	LEAQ (R11)(R14*1), R12
	LEAQ (R12)(R14*1), R13
	LEAQ (R13)(R14*1), AX // rows 16..31 start here
	LEAQ (AX)(R14*1), BX

block16:
	CMPQ CX, $16
	JLT gathers
	LOAD16(R10, R11, R12, R13)
	INTERLEAVE
	STORE16(0)
	LEAQ (BX)(R14*1), DX
	LEAQ (DX)(R14*1), R8
	LOAD16(AX, BX, DX, R8)
	INTERLEAVE
	STORE16(64)
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, AX
	ADDQ $64, BX
	MOVQ R10, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP block16

gathers:
	TESTQ CX, CX
	JZ done
	MOVQ ldb+32(FP), DX
	VPBROADCASTD DX, Z2
	VPMULLD columnIndex<>(SB), Z2, Z2 // Z2 = j*ldb for j = 0..15
	SHLQ $4, DX
	LEAQ (SI)(DX*4), R8 // op(B)[p, 16]
	KMOVW K1, R10
	KMOVW K2, R11

gather:
	KMOVW R10, K3
	KMOVW R11, K4
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VGATHERDPS (SI)(Z2*4), K3, Z0
	VGATHERDPS (R8)(Z2*4), K4, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $128, DI
	DECQ CX
	JNZ gather

done:
	VZEROUPPER
	RET
