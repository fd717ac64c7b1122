#include "textflag.h"

// AVX2+FMA microkernel: a 6×16 tile of C in 12 ymm accumulators (Y4..Y15, two per row). Each step of k loads
// one 16-wide row of the packed B panel (Y0, Y1) and broadcasts the 6 packed A values (alternating Y2/Y3).

#define ROW(off, bc, lo, hi) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS Y0, bc, lo; \
	VFMADD231PS Y1, bc, hi

#define STEP(ao, bo, bo2) \
	VMOVUPS bo(BX), Y0; \
	VMOVUPS bo2(BX), Y1; \
	ROW(ao+0, Y2, Y4, Y5); \
	ROW(ao+4, Y3, Y6, Y7); \
	ROW(ao+8, Y2, Y8, Y9); \
	ROW(ao+12, Y3, Y10, Y11); \
	ROW(ao+16, Y2, Y12, Y13); \
	ROW(ao+20, Y3, Y14, Y15)

#define OVERWRITE(lo, hi) \
	VMULPS Y0, lo, lo; \
	VMULPS Y0, hi, hi; \
	VMOVUPS lo, (DI); \
	VMOVUPS hi, 32(DI); \
	ADDQ SI, DI

#define UPDATE(lo, hi) \
	VMULPS Y0, lo, lo; \
	VMULPS Y0, hi, hi; \
	VFMADD231PS (DI), Y1, lo; \
	VFMADD231PS 32(DI), Y1, hi; \
	VMOVUPS lo, (DI); \
	VMOVUPS hi, 32(DI); \
	ADDQ SI, DI

// func tile6x16AVX2(kc int, a, b, c *float32, ldc int, alpha, beta float32)
TEXT ·tile6x16AVX2(SB), NOSPLIT, $0-48
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), SI
	SHLQ $2, SI

	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

	CMPQ CX, $4
	JLT tail

loop4:
	STEP(0, 0, 32)
	STEP(24, 64, 96)
	STEP(48, 128, 160)
	STEP(72, 192, 224)
	ADDQ $96, AX
	ADDQ $256, BX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE loop4

tail:
	TESTQ CX, CX
	JZ store

loop1:
	STEP(0, 0, 32)
	ADDQ $24, AX
	ADDQ $64, BX
	DECQ CX
	JNZ loop1

store:
	VBROADCASTSS alpha+40(FP), Y0
	MOVL beta+44(FP), DX
	SHLL $1, DX // drop the sign bit: -0 counts as zero too
	JZ overwrite

	VBROADCASTSS beta+44(FP), Y1
	UPDATE(Y4, Y5)
	UPDATE(Y6, Y7)
	UPDATE(Y8, Y9)
	UPDATE(Y10, Y11)
	UPDATE(Y12, Y13)
	UPDATE(Y14, Y15)
	VZEROUPPER
	RET

overwrite:
	OVERWRITE(Y4, Y5)
	OVERWRITE(Y6, Y7)
	OVERWRITE(Y8, Y9)
	OVERWRITE(Y10, Y11)
	OVERWRITE(Y12, Y13)
	OVERWRITE(Y14, Y15)
	VZEROUPPER
	RET
