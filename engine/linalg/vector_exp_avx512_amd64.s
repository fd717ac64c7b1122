#include "textflag.h"

// AVX-512 versions of expSum and sigmoid: the same exp as vector_exp_amd64.s (see there), 16 floats at a time
// with every constant held in a register and the tail done with a lane mask.

DATA zexpHi<>+0(SB)/4, $0x42b0c0a5
GLOBL zexpHi<>(SB), RODATA|NOPTR, $4
DATA zexpLo<>+0(SB)/4, $0xc2aeac50
GLOBL zexpLo<>(SB), RODATA|NOPTR, $4
DATA zlog2e<>+0(SB)/4, $0x3fb8aa3b
GLOBL zlog2e<>(SB), RODATA|NOPTR, $4
DATA zln2Hi<>+0(SB)/4, $0x3f318000
GLOBL zln2Hi<>(SB), RODATA|NOPTR, $4
DATA zln2Lo<>+0(SB)/4, $0xb95e8083
GLOBL zln2Lo<>(SB), RODATA|NOPTR, $4
DATA zexpP0<>+0(SB)/4, $0x39506967
GLOBL zexpP0<>(SB), RODATA|NOPTR, $4
DATA zexpP1<>+0(SB)/4, $0x3ab743ce
GLOBL zexpP1<>(SB), RODATA|NOPTR, $4
DATA zexpP2<>+0(SB)/4, $0x3c088908
GLOBL zexpP2<>(SB), RODATA|NOPTR, $4
DATA zexpP3<>+0(SB)/4, $0x3d2aa9c1
GLOBL zexpP3<>(SB), RODATA|NOPTR, $4
DATA zexpP4<>+0(SB)/4, $0x3e2aaaaa
GLOBL zexpP4<>(SB), RODATA|NOPTR, $4
DATA zexpP5<>+0(SB)/4, $0x3f000000
GLOBL zexpP5<>(SB), RODATA|NOPTR, $4
DATA zone<>+0(SB)/4, $0x3f800000
GLOBL zone<>(SB), RODATA|NOPTR, $4
DATA zbias127<>+0(SB)/4, $0x7f
GLOBL zbias127<>(SB), RODATA|NOPTR, $4

// CONSTS broadcasts the exp constants into Z16..Z28.
#define CONSTS \
	VBROADCASTSS zexpHi<>(SB), Z16; \
	VBROADCASTSS zexpLo<>(SB), Z17; \
	VBROADCASTSS zlog2e<>(SB), Z18; \
	VBROADCASTSS zln2Hi<>(SB), Z19; \
	VBROADCASTSS zln2Lo<>(SB), Z20; \
	VBROADCASTSS zexpP0<>(SB), Z21; \
	VBROADCASTSS zexpP1<>(SB), Z22; \
	VBROADCASTSS zexpP2<>(SB), Z23; \
	VBROADCASTSS zexpP3<>(SB), Z24; \
	VBROADCASTSS zexpP4<>(SB), Z25; \
	VBROADCASTSS zexpP5<>(SB), Z26; \
	VBROADCASTSS zone<>(SB), Z27; \
	VPBROADCASTD zbias127<>(SB), Z28

// EXP replaces Z0 with e^Z0, using Z1..Z3. The clamps keep a NaN (min/max return their second source when
// either is NaN).
#define EXP \
	VMINPS Z0, Z16, Z0; \
	VMAXPS Z0, Z17, Z0; \
	VMULPS Z18, Z0, Z1; \
	VRNDSCALEPS $0, Z1, Z1; \
	VMOVAPS Z19, Z2; \
	VFNMADD213PS Z0, Z1, Z2; \
	VFNMADD231PS Z20, Z1, Z2; \
	VMOVAPS Z21, Z3; \
	VFMADD213PS Z22, Z2, Z3; \
	VFMADD213PS Z23, Z2, Z3; \
	VFMADD213PS Z24, Z2, Z3; \
	VFMADD213PS Z25, Z2, Z3; \
	VFMADD213PS Z26, Z2, Z3; \
	VMULPS Z2, Z2, Z0; \
	VFMADD213PS Z2, Z0, Z3; \
	VADDPS Z27, Z3, Z3; \
	VCVTPS2DQ Z1, Z1; \
	VPADDD Z28, Z1, Z1; \
	VPSLLD $23, Z1, Z1; \
	VMULPS Z1, Z3, Z0

// RECIP replaces Z0 with 1/Z0: a 14-bit VRCP14PS estimate refined by one Newton step (r += r·(1 − d·r)),
// accurate to about an ulp and several times cheaper than VDIVPS.
#define RECIP \
	VRCP14PS Z0, Z1; \
	VFNMADD213PS Z27, Z1, Z0; \
	VFMADD231PS Z0, Z1, Z1; \
	VMOVAPS Z1, Z0

// TAILMASK16 sets K1 to the low CX (< 16) bits.
#define TAILMASK16 \
	MOVL $1, AX; \
	SHLXQ CX, AX, AX; \
	DECQ AX; \
	KMOVW AX, K1

// func expSumAVX512(dst, src *float32, n int, shift float32) float32
TEXT ·expSumAVX512(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CONSTS
	VBROADCASTSS shift+24(FP), Z29
	VPXORD Z30, Z30, Z30

expsum16:
	CMPQ CX, $16
	JLT expsumtail
	VMOVUPS (SI), Z0
	VSUBPS Z29, Z0, Z0
	EXP
	VADDPS Z0, Z30, Z30
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP expsum16

expsumtail:
	TESTQ CX, CX
	JZ expsumreduce
	TAILMASK16
	VMOVUPS.Z (SI), K1, Z0
	VSUBPS Z29, Z0, Z0
	EXP
	VADDPS Z0, Z30, K1, Z30
	VMOVUPS Z0, K1, (DI)

expsumreduce:
	VEXTRACTF64X4 $1, Z30, Y1
	VADDPS Y1, Y30, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func sigmoidAVX512(dst, src *float32, n int)
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CONSTS
	VPXORD Z29, Z29, Z29

sigmoid16:
	CMPQ CX, $16
	JLT sigmoidtail
	VMOVUPS (SI), Z0
	VSUBPS Z0, Z29, Z0
	EXP
	VADDPS Z27, Z0, Z0
	RECIP
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP sigmoid16

sigmoidtail:
	TESTQ CX, CX
	JZ sigmoiddone
	TAILMASK16
	VMOVUPS.Z (SI), K1, Z0
	VSUBPS Z0, Z29, Z0
	EXP
	VADDPS Z27, Z0, Z0
	RECIP
	VMOVUPS Z0, K1, (DI)

sigmoiddone:
	VZEROUPPER
	RET
