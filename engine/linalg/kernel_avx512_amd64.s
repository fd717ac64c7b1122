#include "textflag.h"

// AVX-512 microkernel: a 14×32 tile of C in 28 zmm accumulators (Z4..Z31, two per row). Each step of k loads
// one 32-wide row of the packed B panel (Z0, Z1) and broadcasts the 14 packed A values of that column
// (alternating Z2/Z3), for 28 FMAs per 16 loads.

// ROW multiplies the A value at offset off of the current step into accumulator pair (lo, hi).
#define ROW(off, bc, lo, hi) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS Z0, bc, lo; \
	VFMADD231PS Z1, bc, hi

// STEP performs one step of k whose A and B values sit at offsets ao and bo (B's upper half at bo2 = bo+64).
#define STEP(ao, bo, bo2) \
	VMOVUPS bo(BX), Z0; \
	VMOVUPS bo2(BX), Z1; \
	ROW(ao+0, Z2, Z4, Z5); \
	ROW(ao+4, Z3, Z6, Z7); \
	ROW(ao+8, Z2, Z8, Z9); \
	ROW(ao+12, Z3, Z10, Z11); \
	ROW(ao+16, Z2, Z12, Z13); \
	ROW(ao+20, Z3, Z14, Z15); \
	ROW(ao+24, Z2, Z16, Z17); \
	ROW(ao+28, Z3, Z18, Z19); \
	ROW(ao+32, Z2, Z20, Z21); \
	ROW(ao+36, Z3, Z22, Z23); \
	ROW(ao+40, Z2, Z24, Z25); \
	ROW(ao+44, Z3, Z26, Z27); \
	ROW(ao+48, Z2, Z28, Z29); \
	ROW(ao+52, Z3, Z30, Z31)

// OVERWRITE stores alpha*acc (alpha in Z0) to the columns of one row of C at DI selected by K1 and K2, moves DI
// to the next row and stops after the last row (R8 counts them down).
#define OVERWRITE(lo, hi) \
	VMULPS Z0, lo, lo; \
	VMULPS Z0, hi, hi; \
	VMOVUPS lo, K1, (DI); \
	VMOVUPS hi, K2, 64(DI); \
	ADDQ SI, DI; \
	DECQ R8; \
	JZ done

// UPDATE is OVERWRITE for alpha*acc + beta*C (beta in Z1).
#define UPDATE(lo, hi) \
	VMULPS Z0, lo, lo; \
	VMULPS Z0, hi, hi; \
	VMOVUPS.Z (DI), K1, Z2; \
	VFMADD231PS Z2, Z1, lo; \
	VMOVUPS.Z 64(DI), K2, Z3; \
	VFMADD231PS Z3, Z1, hi; \
	VMOVUPS lo, K1, (DI); \
	VMOVUPS hi, K2, 64(DI); \
	ADDQ SI, DI; \
	DECQ R8; \
	JZ done

// func tile14x32AVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, rows, cols int)
//
// Only the first rows (1..14) rows and cols (1..32) columns of the tile are read and written, so edge tiles
// need no scratch copy.
TEXT ·tile14x32AVX512(SB), NOSPLIT, $0-64
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI

	// Pull the C tile toward L1 while the products are accumulated.
	MOVQ DI, DX
	MOVQ $14, R8
prefetch:
	PREFETCHT0 (DX)
	PREFETCHT0 64(DX)
	ADDQ SI, DX
	DECQ R8
	JNZ prefetch

	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31

	CMPQ CX, $4
	JLT tail

loop4:
	STEP(0, 0, 64)
	STEP(56, 128, 192)
	STEP(112, 256, 320)
	STEP(168, 384, 448)
	ADDQ $224, AX
	ADDQ $512, BX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE loop4

tail:
	TESTQ CX, CX
	JZ store

loop1:
	STEP(0, 0, 64)
	ADDQ $56, AX
	ADDQ $128, BX
	DECQ CX
	JNZ loop1

store:
	MOVQ cols+56(FP), R9
	MOVQ R9, R10
	CMPQ R10, $16
	JLE 2(PC)
	MOVQ $16, R10
	MOVL $1, R11
	SHLXQ R10, R11, R11
	DECQ R11
	KMOVW R11, K1 // the columns of the lower 16 that exist
	SUBQ $16, R9
	JGE 2(PC)
	XORQ R9, R9
	MOVL $1, R11
	SHLXQ R9, R11, R11
	DECQ R11
	KMOVW R11, K2 // and of the upper 16
	MOVQ rows+48(FP), R8
	VBROADCASTSS alpha+40(FP), Z0
	MOVL beta+44(FP), DX
	SHLL $1, DX // drop the sign bit: -0 counts as zero too
	JZ overwrite

	VBROADCASTSS beta+44(FP), Z1
	UPDATE(Z4, Z5)
	UPDATE(Z6, Z7)
	UPDATE(Z8, Z9)
	UPDATE(Z10, Z11)
	UPDATE(Z12, Z13)
	UPDATE(Z14, Z15)
	UPDATE(Z16, Z17)
	UPDATE(Z18, Z19)
	UPDATE(Z20, Z21)
	UPDATE(Z22, Z23)
	UPDATE(Z24, Z25)
	UPDATE(Z26, Z27)
	UPDATE(Z28, Z29)
	UPDATE(Z30, Z31)

overwrite:
	OVERWRITE(Z4, Z5)
	OVERWRITE(Z6, Z7)
	OVERWRITE(Z8, Z9)
	OVERWRITE(Z10, Z11)
	OVERWRITE(Z12, Z13)
	OVERWRITE(Z14, Z15)
	OVERWRITE(Z16, Z17)
	OVERWRITE(Z18, Z19)
	OVERWRITE(Z20, Z21)
	OVERWRITE(Z22, Z23)
	OVERWRITE(Z24, Z25)
	OVERWRITE(Z26, Z27)
	OVERWRITE(Z28, Z29)
	OVERWRITE(Z30, Z31)

done:
	VZEROUPPER
	RET
