#include "textflag.h"

// AVX-512 microkernel for narrow products (n ≤ 16, e.g. LoRA's rank-16 factors): a 14×16 tile of C in 14 zmm
// accumulators (Z4..Z17), one B load and 14 broadcast loads per step of k. Fourteen independent FMA chains
// cover the FMA latency; the loads, not the FMAs, set the pace.

#define ROW(off, bc, acc) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS Z0, bc, acc

#define STEP(ao, bo) \
	VMOVUPS bo(BX), Z0; \
	ROW(ao+0, Z2, Z4); \
	ROW(ao+4, Z3, Z5); \
	ROW(ao+8, Z2, Z6); \
	ROW(ao+12, Z3, Z7); \
	ROW(ao+16, Z2, Z8); \
	ROW(ao+20, Z3, Z9); \
	ROW(ao+24, Z2, Z10); \
	ROW(ao+28, Z3, Z11); \
	ROW(ao+32, Z2, Z12); \
	ROW(ao+36, Z3, Z13); \
	ROW(ao+40, Z2, Z14); \
	ROW(ao+44, Z3, Z15); \
	ROW(ao+48, Z2, Z16); \
	ROW(ao+52, Z3, Z17)

// OVERWRITE stores alpha*acc to the columns K1 selects of one row of C at DI, moves DI to the next row and
// stops after the last row (R8 counts them down); UPDATE does the same for alpha*acc + beta*C.
#define OVERWRITE(acc) \
	VMULPS Z0, acc, acc; \
	VMOVUPS acc, K1, (DI); \
	ADDQ SI, DI; \
	DECQ R8; \
	JZ done

#define UPDATE(acc) \
	VMULPS Z0, acc, acc; \
	VMOVUPS.Z (DI), K1, Z2; \
	VFMADD231PS Z2, Z1, acc; \
	VMOVUPS acc, K1, (DI); \
	ADDQ SI, DI; \
	DECQ R8; \
	JZ done

// func tile14x16AVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, rows, cols int)
//
// Only the first rows (1..14) rows and cols (1..16) columns of the tile are read and written.
TEXT ·tile14x16AVX512(SB), NOSPLIT, $0-64
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI
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
	CMPQ CX, $4
	JLT tail

loop4:
	STEP(0, 0)
	STEP(56, 64)
	STEP(112, 128)
	STEP(168, 192)
	ADDQ $224, AX
	ADDQ $256, BX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE loop4

tail:
	TESTQ CX, CX
	JZ store

loop1:
	STEP(0, 0)
	ADDQ $56, AX
	ADDQ $64, BX
	DECQ CX
	JNZ loop1

store:
	MOVQ cols+56(FP), R9
	MOVL $1, R11
	SHLXQ R9, R11, R11
	DECQ R11
	KMOVW R11, K1 // the columns that exist
	MOVQ rows+48(FP), R8
	VBROADCASTSS alpha+40(FP), Z0
	MOVL beta+44(FP), DX
	SHLL $1, DX // drop the sign bit: -0 counts as zero too
	JZ overwrite
	VBROADCASTSS beta+44(FP), Z1
	UPDATE(Z4)
	UPDATE(Z5)
	UPDATE(Z6)
	UPDATE(Z7)
	UPDATE(Z8)
	UPDATE(Z9)
	UPDATE(Z10)
	UPDATE(Z11)
	UPDATE(Z12)
	UPDATE(Z13)
	UPDATE(Z14)
	UPDATE(Z15)
	UPDATE(Z16)
	UPDATE(Z17)

overwrite:
	OVERWRITE(Z4)
	OVERWRITE(Z5)
	OVERWRITE(Z6)
	OVERWRITE(Z7)
	OVERWRITE(Z8)
	OVERWRITE(Z9)
	OVERWRITE(Z10)
	OVERWRITE(Z11)
	OVERWRITE(Z12)
	OVERWRITE(Z13)
	OVERWRITE(Z14)
	OVERWRITE(Z15)
	OVERWRITE(Z16)
	OVERWRITE(Z17)

done:
	VZEROUPPER
	RET
