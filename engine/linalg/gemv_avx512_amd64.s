#include "textflag.h"

// Matrix-vector kernels for m == 1 products (sampling one token): the matrix streams from L2 or L3 once, so
// these aim to keep that stream saturated with accumulators held in registers.

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

// COLSROW loads the 64 (masked) columns of the B row at base and multiplies them by the broadcast x value in bc
// into the accumulators c0..c3.
#define COLSROW(base, bc, c0, c1, c2, c3) \
	VMOVUPS.Z (base), K1, Z0; \
	VMOVUPS.Z 64(base), K2, Z1; \
	VMOVUPS.Z 128(base), K3, Z2; \
	VMOVUPS.Z 192(base), K4, Z3; \
	VFMADD231PS Z0, bc, c0; \
	VFMADD231PS Z1, bc, c1; \
	VFMADD231PS Z2, bc, c2; \
	VFMADD231PS Z3, bc, c3

// func gemvCols64AVX512(k int, x, b *float32, ldb int, acc *float32, cols int)
//
// acc[j] = Σ_p x[p]·B[p, j] for j < cols ≤ 64, B's row p at b + p*ldb floats. Even and odd p accumulate into
// separate registers so eight FMA chains are in flight.
TEXT ·gemvCols64AVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), BX
	MOVQ ldb+24(FP), DX
	SHLQ $2, DX
	MOVQ cols+40(FP), R12
	MASK16(K1)
	MASK16(K2)
	MASK16(K3)
	MASK16(K4)
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

colspair:
	CMPQ CX, $2
	JLT colstail
	VBROADCASTSS (SI), Z4
	VBROADCASTSS 4(SI), Z5
	COLSROW(BX, Z4, Z16, Z17, Z18, Z19)
	LEAQ (BX)(DX*1), R8
	COLSROW(R8, Z5, Z20, Z21, Z22, Z23)
	ADDQ $8, SI
	LEAQ (BX)(DX*2), BX
	SUBQ $2, CX
	JMP colspair

colstail:
	TESTQ CX, CX
	JZ colsstore
	VBROADCASTSS (SI), Z4
	COLSROW(BX, Z4, Z16, Z17, Z18, Z19)

colsstore:
	MOVQ acc+32(FP), DI
	VADDPS Z20, Z16, Z16
	VADDPS Z21, Z17, Z17
	VADDPS Z22, Z18, Z18
	VADDPS Z23, Z19, Z19
	VMOVUPS Z16, K1, (DI)
	VMOVUPS Z17, K2, 64(DI)
	VMOVUPS Z18, K3, 128(DI)
	VMOVUPS Z19, K4, 192(DI)
	VZEROUPPER
	RET

// FOLD adds the upper half of zmm accumulator z (ymm alias y) to its lower half into ymm out.
#define FOLD(z, y, out) \
	VEXTRACTF64X4 $1, z, Y8; \
	VADDPS Y8, y, out

// ROWS8STEP accumulates one 16-wide step of k (lanes masked by kmask; merge-masking leaves the lanes past k
// untouched) of x against the eight rows.
#define ROWS8STEP(kmask) \
	VMOVUPS.Z (SI)(AX*1), kmask, Z0; \
	VFMADD231PS (R8)(AX*1), Z0, kmask, Z16; \
	VFMADD231PS (R10)(AX*1), Z0, kmask, Z17; \
	VFMADD231PS (R11)(AX*1), Z0, kmask, Z18; \
	VFMADD231PS (R12)(AX*1), Z0, kmask, Z19; \
	VFMADD231PS (R13)(AX*1), Z0, kmask, Z20; \
	VFMADD231PS (R14)(AX*1), Z0, kmask, Z21; \
	VFMADD231PS (R15)(AX*1), Z0, kmask, Z22; \
	VFMADD231PS (BX)(AX*1), Z0, kmask, Z23

// func gemvRows8AVX512(k int, x, b *float32, ldb int, out *float32, groups int)
//
// out[j] = Σ_p x[p]·B_j[p] for the 8·groups rows B_j = b + j*ldb floats, each contiguous over p < k, eight rows
// per pass over x.
TEXT ·gemvRows8AVX512(SB), NOSPLIT, $0-48
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), R8
	MOVQ ldb+24(FP), DX
	SHLQ $2, DX
	MOVQ out+32(FP), DI
	MOVL $0xffff, R9
	KMOVW R9, K1 // full steps
	MOVQ k+0(FP), CX
	ANDQ $15, CX
	MOVL $1, R9
	SHLXQ CX, R9, R9
	DECQ R9
	KMOVW R9, K2 // the last, partial step
	MOVQ groups+40(FP), R9
	TESTQ R9, R9
	JZ rowsdone

rowsgroup:
	LEAQ (R8)(DX*1), R10
	LEAQ (R10)(DX*1), R11
	LEAQ (R11)(DX*1), R12
	LEAQ (R12)(DX*1), R13
	LEAQ (R13)(DX*1), R14
	LEAQ (R14)(DX*1), R15
	LEAQ (R15)(DX*1), BX
	MOVQ k+0(FP), CX
	XORQ AX, AX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

rowsloop:
	CMPQ CX, $16
	JLT rowstail
	ROWS8STEP(K1)
	ADDQ $64, AX
	SUBQ $16, CX
	JMP rowsloop

rowstail:
	TESTQ CX, CX
	JZ rowsreduce
	ROWS8STEP(K2)

rowsreduce:
	FOLD(Z16, Y16, Y0)
	FOLD(Z17, Y17, Y1)
	FOLD(Z18, Y18, Y2)
	FOLD(Z19, Y19, Y3)
	FOLD(Z20, Y20, Y4)
	FOLD(Z21, Y21, Y5)
	FOLD(Z22, Y22, Y6)
	FOLD(Z23, Y23, Y7)
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y5, Y4, Y4
	VHADDPS Y7, Y6, Y6
	VHADDPS Y2, Y0, Y0
	VHADDPS Y6, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS Y2, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	LEAQ (BX)(DX*1), R8 // row 8 of this group is row 0 of the next
	DECQ R9
	JNZ rowsgroup

rowsdone:
	VZEROUPPER
	RET
