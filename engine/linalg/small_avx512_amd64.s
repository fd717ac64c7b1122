#include "textflag.h"

// Kernels for products with at most 4 rows (sampling several completions at once). They read op(B) straight
// from the matrix, once for all 4 rows, instead of packing it: with so few rows a pack would cost more than
// the product.

// NNROW multiplies row r's A value (broadcast into bc) into its four accumulators.
#define NNROW(ptr, bc, c0, c1, c2, c3) \
	VBROADCASTSS (ptr)(DX*1), bc; \
	VFMADD231PS Z0, bc, c0; \
	VFMADD231PS Z1, bc, c1; \
	VFMADD231PS Z2, bc, c2; \
	VFMADD231PS Z3, bc, c3

// NNSTORE writes alpha*acc (+ beta*C when beta != 0, flagged by AX) to the 64 columns of one C row at ptr,
// masked to the columns that exist.
#define NNSTORE(ptr, c0, c1, c2, c3) \
	VMULPS Z4, c0, c0; \
	VMULPS Z4, c1, c1; \
	VMULPS Z4, c2, c2; \
	VMULPS Z4, c3, c3; \
	TESTQ AX, AX; \
	JZ 9(PC); \
	VMOVUPS.Z (ptr), K1, Z0; \
	VFMADD231PS Z0, Z5, c0; \
	VMOVUPS.Z 64(ptr), K2, Z1; \
	VFMADD231PS Z1, Z5, c1; \
	VMOVUPS.Z 128(ptr), K3, Z2; \
	VFMADD231PS Z2, Z5, c2; \
	VMOVUPS.Z 192(ptr), K4, Z3; \
	VFMADD231PS Z3, Z5, c3; \
	VMOVUPS c0, K1, (ptr); \
	VMOVUPS c1, K2, 64(ptr); \
	VMOVUPS c2, K3, 128(ptr); \
	VMOVUPS c3, K4, 192(ptr)

// MASK16 sets kreg to the lowest min(max(R12, 0), 16) bits and subtracts 16 from R12.
#define MASK16(kreg) \
	MOVQ R12, R13; \
	CMPQ R13, $16; \
	JLE 2(PC); \
	MOVQ $16, R13; \
	TESTQ R13, R13; \
	JGE 2(PC); \
	XORQ R13, R13; \
	MOVL $1, R14; \
	SHLXQ R13, R14, R14; \
	DECQ R14; \
	KMOVW R14, kreg; \
	SUBQ $16, R12

// func small4x64NN(k int, a *[4]*float32, aStride int, b *float32, ldb int, c *[4]*float32, alpha, beta float32, cols int)
//
// C[r, 0:cols] = alpha * Σ_p A_r[p]·B[p, 0:cols] + beta*C[r, 0:cols] for r < 4, cols ≤ 64, where A_r[p] is at
// a[r] + p*aStride bytes and B's row p at b + p*ldb floats.
TEXT ·small4x64NN(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ aStride+16(FP), DI
	MOVQ b+24(FP), BX
	MOVQ ldb+32(FP), SI
	SHLQ $2, SI
	MOVQ cols+56(FP), R12
	MASK16(K1)
	MASK16(K2)
	MASK16(K3)
	MASK16(K4)
	XORQ DX, DX
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
	TESTQ CX, CX
	JZ nnstore

nnloop:
	VMOVUPS.Z (BX), K1, Z0
	VMOVUPS.Z 64(BX), K2, Z1
	VMOVUPS.Z 128(BX), K3, Z2
	VMOVUPS.Z 192(BX), K4, Z3
	NNROW(R8, Z4, Z16, Z17, Z18, Z19)
	NNROW(R9, Z5, Z20, Z21, Z22, Z23)
	NNROW(R10, Z6, Z24, Z25, Z26, Z27)
	NNROW(R11, Z7, Z28, Z29, Z30, Z31)
	ADDQ DI, DX
	ADDQ SI, BX
	DECQ CX
	JNZ nnloop

nnstore:
	VBROADCASTSS alpha+48(FP), Z4
	VBROADCASTSS beta+52(FP), Z5
	MOVL beta+52(FP), AX
	SHLL $1, AX // zero (of either sign) means C is not read
	MOVQ c+40(FP), BX
	MOVQ 0(BX), R8
	MOVQ 8(BX), R9
	MOVQ 16(BX), R10
	MOVQ 24(BX), R11
	NNSTORE(R8, Z16, Z17, Z18, Z19)
	NNSTORE(R9, Z20, Z21, Z22, Z23)
	NNSTORE(R10, Z24, Z25, Z26, Z27)
	NNSTORE(R11, Z28, Z29, Z30, Z31)
	VZEROUPPER
	RET

// NTSTEP accumulates one 16-wide step of k (loads masked by kmask) into the 4×4 dot accumulators.
#define NTSTEP(kmask) \
	VMOVUPS.Z (R8)(DX*1), kmask, Z0; \
	VMOVUPS.Z (R9)(DX*1), kmask, Z1; \
	VMOVUPS.Z (R10)(DX*1), kmask, Z2; \
	VMOVUPS.Z (R11)(DX*1), kmask, Z3; \
	VMOVUPS.Z (R12)(DX*1), kmask, Z4; \
	VMOVUPS.Z (R13)(DX*1), kmask, Z5; \
	VMOVUPS.Z (R14)(DX*1), kmask, Z6; \
	VMOVUPS.Z (R15)(DX*1), kmask, Z7; \
	VFMADD231PS Z4, Z0, Z16; \
	VFMADD231PS Z5, Z0, Z17; \
	VFMADD231PS Z6, Z0, Z18; \
	VFMADD231PS Z7, Z0, Z19; \
	VFMADD231PS Z4, Z1, Z20; \
	VFMADD231PS Z5, Z1, Z21; \
	VFMADD231PS Z6, Z1, Z22; \
	VFMADD231PS Z7, Z1, Z23; \
	VFMADD231PS Z4, Z2, Z24; \
	VFMADD231PS Z5, Z2, Z25; \
	VFMADD231PS Z6, Z2, Z26; \
	VFMADD231PS Z7, Z2, Z27; \
	VFMADD231PS Z4, Z3, Z28; \
	VFMADD231PS Z5, Z3, Z29; \
	VFMADD231PS Z6, Z3, Z30; \
	VFMADD231PS Z7, Z3, Z31

// NTREDUCE sums each of four accumulators horizontally into the four lanes of xout (via Y0..Y3).
#define NTREDUCE(a0, a1, a2, a3, y0, y1, y2, y3, xout) \
	VEXTRACTF64X4 $1, a0, Y0; \
	VADDPS Y0, y0, Y0; \
	VEXTRACTF64X4 $1, a1, Y1; \
	VADDPS Y1, y1, Y1; \
	VEXTRACTF64X4 $1, a2, Y2; \
	VADDPS Y2, y2, Y2; \
	VEXTRACTF64X4 $1, a3, Y3; \
	VADDPS Y3, y3, Y3; \
	VHADDPS Y1, Y0, Y0; \
	VHADDPS Y3, Y2, Y2; \
	VHADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, xout

// func small4xNT(k int, a *[4]*float32, b *float32, ldb int, c *float32, ldc int, alpha, beta float32, groups int)
//
// C[r, j] = alpha * Σ_p A_r[p]·B_j[p] + beta*C[r, j] for r < 4 and j < 4·groups, with A_r contiguous rows of k
// floats, B_j = b + j*ldb floats (contiguous over p) and C rows ldc floats apart. Each group of four columns
// is a 4×4 block of dot products; looping over the groups here saves a call per 16 outputs.
TEXT ·small4xNT(SB), NOSPLIT, $0-64
	MOVQ a+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ b+16(FP), R12
	MOVQ ldb+24(FP), AX
	SHLQ $2, AX
	LEAQ (R12)(AX*1), R13
	LEAQ (R13)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), SI
	SHLQ $2, SI
	MOVQ groups+56(FP), BX
	TESTQ BX, BX
	JZ ntdone

ntgroup:
	MOVQ k+0(FP), CX
	XORQ DX, DX
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
	MOVL $0xffff, AX
	KMOVW AX, K1

ntloop:
	CMPQ CX, $16
	JLT nttail
	NTSTEP(K1)
	ADDQ $64, DX
	SUBQ $16, CX
	JMP ntloop

nttail:
	TESTQ CX, CX
	JZ ntreduce
	MOVL $1, AX
	SHLXQ CX, AX, AX
	DECQ AX
	KMOVW AX, K2
	NTSTEP(K2)

ntreduce:
	NTREDUCE(Z16, Z17, Z18, Z19, Y16, Y17, Y18, Y19, X8)
	NTREDUCE(Z20, Z21, Z22, Z23, Y20, Y21, Y22, Y23, X9)
	NTREDUCE(Z24, Z25, Z26, Z27, Y24, Y25, Y26, Y27, X10)
	NTREDUCE(Z28, Z29, Z30, Z31, Y28, Y29, Y30, Y31, X11)
	VBROADCASTSS alpha+48(FP), X4
	VMULPS X4, X8, X8
	VMULPS X4, X9, X9
	VMULPS X4, X10, X10
	VMULPS X4, X11, X11
	MOVQ DI, AX
	MOVL beta+52(FP), CX
	SHLL $1, CX // zero (of either sign) means C is not read
	JZ ntstore
	VBROADCASTSS beta+52(FP), X5
	VFMADD231PS (AX), X5, X8
	ADDQ SI, AX
	VFMADD231PS (AX), X5, X9
	ADDQ SI, AX
	VFMADD231PS (AX), X5, X10
	ADDQ SI, AX
	VFMADD231PS (AX), X5, X11
	MOVQ DI, AX

ntstore:
	VMOVUPS X8, (AX)
	ADDQ SI, AX
	VMOVUPS X9, (AX)
	ADDQ SI, AX
	VMOVUPS X10, (AX)
	ADDQ SI, AX
	VMOVUPS X11, (AX)
	// Next group: four columns on in C, four rows on in b.
	ADDQ $16, DI
	MOVQ ldb+24(FP), AX
	SHLQ $4, AX
	ADDQ AX, R12
	ADDQ AX, R13
	ADDQ AX, R14
	ADDQ AX, R15
	DECQ BX
	JNZ ntgroup

ntdone:
	VZEROUPPER
	RET
