#include "textflag.h"

// exp on 8 floats at a time: x is clamped to [-87.34, 88.38], split as n·ln2 + r with |r| ≤ ln2/2 (ln2 in two
// parts so r stays exact), e^r comes from a degree-7 polynomial (Cephes coefficients) and 2^n is built in the
// exponent bits. Relative error is a few float32 ulp; NaN propagates. Constants are 8-lane vectors so they
// can be memory operands.

DATA expHi<>+0(SB)/4, $0x42b0c0a5
DATA expHi<>+4(SB)/4, $0x42b0c0a5
DATA expHi<>+8(SB)/4, $0x42b0c0a5
DATA expHi<>+12(SB)/4, $0x42b0c0a5
DATA expHi<>+16(SB)/4, $0x42b0c0a5
DATA expHi<>+20(SB)/4, $0x42b0c0a5
DATA expHi<>+24(SB)/4, $0x42b0c0a5
DATA expHi<>+28(SB)/4, $0x42b0c0a5
GLOBL expHi<>(SB), RODATA|NOPTR, $32
DATA expLo<>+0(SB)/4, $0xc2aeac50
DATA expLo<>+4(SB)/4, $0xc2aeac50
DATA expLo<>+8(SB)/4, $0xc2aeac50
DATA expLo<>+12(SB)/4, $0xc2aeac50
DATA expLo<>+16(SB)/4, $0xc2aeac50
DATA expLo<>+20(SB)/4, $0xc2aeac50
DATA expLo<>+24(SB)/4, $0xc2aeac50
DATA expLo<>+28(SB)/4, $0xc2aeac50
GLOBL expLo<>(SB), RODATA|NOPTR, $32
DATA log2e<>+0(SB)/4, $0x3fb8aa3b
DATA log2e<>+4(SB)/4, $0x3fb8aa3b
DATA log2e<>+8(SB)/4, $0x3fb8aa3b
DATA log2e<>+12(SB)/4, $0x3fb8aa3b
DATA log2e<>+16(SB)/4, $0x3fb8aa3b
DATA log2e<>+20(SB)/4, $0x3fb8aa3b
DATA log2e<>+24(SB)/4, $0x3fb8aa3b
DATA log2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL log2e<>(SB), RODATA|NOPTR, $32
DATA ln2Hi<>+0(SB)/4, $0x3f318000
DATA ln2Hi<>+4(SB)/4, $0x3f318000
DATA ln2Hi<>+8(SB)/4, $0x3f318000
DATA ln2Hi<>+12(SB)/4, $0x3f318000
DATA ln2Hi<>+16(SB)/4, $0x3f318000
DATA ln2Hi<>+20(SB)/4, $0x3f318000
DATA ln2Hi<>+24(SB)/4, $0x3f318000
DATA ln2Hi<>+28(SB)/4, $0x3f318000
GLOBL ln2Hi<>(SB), RODATA|NOPTR, $32
DATA ln2Lo<>+0(SB)/4, $0xb95e8083
DATA ln2Lo<>+4(SB)/4, $0xb95e8083
DATA ln2Lo<>+8(SB)/4, $0xb95e8083
DATA ln2Lo<>+12(SB)/4, $0xb95e8083
DATA ln2Lo<>+16(SB)/4, $0xb95e8083
DATA ln2Lo<>+20(SB)/4, $0xb95e8083
DATA ln2Lo<>+24(SB)/4, $0xb95e8083
DATA ln2Lo<>+28(SB)/4, $0xb95e8083
GLOBL ln2Lo<>(SB), RODATA|NOPTR, $32
DATA expP0<>+0(SB)/4, $0x39506967
DATA expP0<>+4(SB)/4, $0x39506967
DATA expP0<>+8(SB)/4, $0x39506967
DATA expP0<>+12(SB)/4, $0x39506967
DATA expP0<>+16(SB)/4, $0x39506967
DATA expP0<>+20(SB)/4, $0x39506967
DATA expP0<>+24(SB)/4, $0x39506967
DATA expP0<>+28(SB)/4, $0x39506967
GLOBL expP0<>(SB), RODATA|NOPTR, $32
DATA expP1<>+0(SB)/4, $0x3ab743ce
DATA expP1<>+4(SB)/4, $0x3ab743ce
DATA expP1<>+8(SB)/4, $0x3ab743ce
DATA expP1<>+12(SB)/4, $0x3ab743ce
DATA expP1<>+16(SB)/4, $0x3ab743ce
DATA expP1<>+20(SB)/4, $0x3ab743ce
DATA expP1<>+24(SB)/4, $0x3ab743ce
DATA expP1<>+28(SB)/4, $0x3ab743ce
GLOBL expP1<>(SB), RODATA|NOPTR, $32
DATA expP2<>+0(SB)/4, $0x3c088908
DATA expP2<>+4(SB)/4, $0x3c088908
DATA expP2<>+8(SB)/4, $0x3c088908
DATA expP2<>+12(SB)/4, $0x3c088908
DATA expP2<>+16(SB)/4, $0x3c088908
DATA expP2<>+20(SB)/4, $0x3c088908
DATA expP2<>+24(SB)/4, $0x3c088908
DATA expP2<>+28(SB)/4, $0x3c088908
GLOBL expP2<>(SB), RODATA|NOPTR, $32
DATA expP3<>+0(SB)/4, $0x3d2aa9c1
DATA expP3<>+4(SB)/4, $0x3d2aa9c1
DATA expP3<>+8(SB)/4, $0x3d2aa9c1
DATA expP3<>+12(SB)/4, $0x3d2aa9c1
DATA expP3<>+16(SB)/4, $0x3d2aa9c1
DATA expP3<>+20(SB)/4, $0x3d2aa9c1
DATA expP3<>+24(SB)/4, $0x3d2aa9c1
DATA expP3<>+28(SB)/4, $0x3d2aa9c1
GLOBL expP3<>(SB), RODATA|NOPTR, $32
DATA expP4<>+0(SB)/4, $0x3e2aaaaa
DATA expP4<>+4(SB)/4, $0x3e2aaaaa
DATA expP4<>+8(SB)/4, $0x3e2aaaaa
DATA expP4<>+12(SB)/4, $0x3e2aaaaa
DATA expP4<>+16(SB)/4, $0x3e2aaaaa
DATA expP4<>+20(SB)/4, $0x3e2aaaaa
DATA expP4<>+24(SB)/4, $0x3e2aaaaa
DATA expP4<>+28(SB)/4, $0x3e2aaaaa
GLOBL expP4<>(SB), RODATA|NOPTR, $32
DATA expP5<>+0(SB)/4, $0x3f000000
DATA expP5<>+4(SB)/4, $0x3f000000
DATA expP5<>+8(SB)/4, $0x3f000000
DATA expP5<>+12(SB)/4, $0x3f000000
DATA expP5<>+16(SB)/4, $0x3f000000
DATA expP5<>+20(SB)/4, $0x3f000000
DATA expP5<>+24(SB)/4, $0x3f000000
DATA expP5<>+28(SB)/4, $0x3f000000
GLOBL expP5<>(SB), RODATA|NOPTR, $32
DATA one<>+0(SB)/4, $0x3f800000
DATA one<>+4(SB)/4, $0x3f800000
DATA one<>+8(SB)/4, $0x3f800000
DATA one<>+12(SB)/4, $0x3f800000
DATA one<>+16(SB)/4, $0x3f800000
DATA one<>+20(SB)/4, $0x3f800000
DATA one<>+24(SB)/4, $0x3f800000
DATA one<>+28(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $32
DATA bias127<>+0(SB)/4, $0x7f
DATA bias127<>+4(SB)/4, $0x7f
DATA bias127<>+8(SB)/4, $0x7f
DATA bias127<>+12(SB)/4, $0x7f
DATA bias127<>+16(SB)/4, $0x7f
DATA bias127<>+20(SB)/4, $0x7f
DATA bias127<>+24(SB)/4, $0x7f
DATA bias127<>+28(SB)/4, $0x7f
GLOBL bias127<>(SB), RODATA|NOPTR, $32

// tailMask: 8 lanes of all-ones then 8 of zeros; the 8 lanes starting at lane 8-n select the first n.
DATA tailMask<>+0(SB)/4, $0xffffffff
DATA tailMask<>+4(SB)/4, $0xffffffff
DATA tailMask<>+8(SB)/4, $0xffffffff
DATA tailMask<>+12(SB)/4, $0xffffffff
DATA tailMask<>+16(SB)/4, $0xffffffff
DATA tailMask<>+20(SB)/4, $0xffffffff
DATA tailMask<>+24(SB)/4, $0xffffffff
DATA tailMask<>+28(SB)/4, $0xffffffff
DATA tailMask<>+32(SB)/4, $0x0
DATA tailMask<>+36(SB)/4, $0x0
DATA tailMask<>+40(SB)/4, $0x0
DATA tailMask<>+44(SB)/4, $0x0
DATA tailMask<>+48(SB)/4, $0x0
DATA tailMask<>+52(SB)/4, $0x0
DATA tailMask<>+56(SB)/4, $0x0
DATA tailMask<>+60(SB)/4, $0x0
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// EXP replaces Y0 with e^Y0, using Y1..Y3.
#define EXP \
	VMOVUPS expHi<>(SB), Y1; \
	VMINPS Y0, Y1, Y0; \
	VMOVUPS expLo<>(SB), Y1; \
	VMAXPS Y0, Y1, Y0; \
	VMULPS log2e<>(SB), Y0, Y1; \
	VROUNDPS $0, Y1, Y1; \
	VMOVUPS ln2Hi<>(SB), Y2; \
	VFNMADD213PS Y0, Y1, Y2; \
	VMOVUPS ln2Lo<>(SB), Y3; \
	VFNMADD231PS Y3, Y1, Y2; \
	VMOVUPS expP0<>(SB), Y3; \
	VFMADD213PS expP1<>(SB), Y2, Y3; \
	VFMADD213PS expP2<>(SB), Y2, Y3; \
	VFMADD213PS expP3<>(SB), Y2, Y3; \
	VFMADD213PS expP4<>(SB), Y2, Y3; \
	VFMADD213PS expP5<>(SB), Y2, Y3; \
	VMULPS Y2, Y2, Y0; \
	VFMADD213PS Y2, Y0, Y3; \
	VADDPS one<>(SB), Y3, Y3; \
	VCVTPS2DQ Y1, Y1; \
	VPADDD bias127<>(SB), Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VMULPS Y1, Y3, Y0

// TAILMASK loads into Y7 the mask of the first CX (1..7) lanes.
#define TAILMASK \
	MOVQ $8, AX; \
	SUBQ CX, AX; \
	LEAQ tailMask<>(SB), DX; \
	VMOVUPS (DX)(AX*4), Y7

// func expSumAVX2(dst, src *float32, n int, shift float32) float32
// Sets dst[i] = e^(src[i]-shift) and returns their sum; dst may be src.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y4
	VXORPS Y5, Y5, Y5

expsum8:
	CMPQ CX, $8
	JLT expsumtail
	VMOVUPS (SI), Y0
	VSUBPS Y4, Y0, Y0
	EXP
	VADDPS Y0, Y5, Y5
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP expsum8

expsumtail:
	TESTQ CX, CX
	JZ expsumreduce
	TAILMASK
	VMASKMOVPS (SI), Y7, Y0
	VSUBPS Y4, Y0, Y0
	EXP
	VANDPS Y7, Y0, Y0
	VADDPS Y0, Y5, Y5
	VMASKMOVPS Y0, Y7, (DI)

expsumreduce:
	VEXTRACTF128 $1, Y5, X1
	VADDPS X1, X5, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func sigmoidAVX2(dst, src *float32, n int)
// Sets dst[i] = 1/(1+e^(-src[i])); dst may be src.
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y4, Y4, Y4
	VMOVUPS one<>(SB), Y5

sigmoid8:
	CMPQ CX, $8
	JLT sigmoidtail
	VMOVUPS (SI), Y0
	VSUBPS Y0, Y4, Y0
	EXP
	VADDPS Y5, Y0, Y0
	VDIVPS Y0, Y5, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP sigmoid8

sigmoidtail:
	TESTQ CX, CX
	JZ sigmoiddone
	TAILMASK
	VMASKMOVPS (SI), Y7, Y0
	VSUBPS Y0, Y4, Y0
	EXP
	VADDPS Y5, Y0, Y0
	VDIVPS Y0, Y5, Y0
	VMASKMOVPS Y0, Y7, (DI)

sigmoiddone:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
// Returns the largest of x[0..n) (n ≥ 1), or NaN if any is NaN.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS (SI), Y0
	VMOVAPS Y0, Y1
	VXORPS Y3, Y3, Y3 // NaN detector: ordered-compare failures accumulate here

max16:
	CMPQ CX, $16
	JLT max8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMAXPS Y4, Y0, Y0
	VMAXPS Y5, Y1, Y1
	VCMPPS $3, Y4, Y4, Y6 // unordered: NaN lanes
	VORPS Y6, Y3, Y3
	VCMPPS $3, Y5, Y5, Y6
	VORPS Y6, Y3, Y3
	ADDQ $64, SI
	SUBQ $16, CX
	JMP max16

max8:
	CMPQ CX, $8
	JLT maxtail
	VMOVUPS (SI), Y4
	VMAXPS Y4, Y0, Y0
	VCMPPS $3, Y4, Y4, Y6
	VORPS Y6, Y3, Y3
	ADDQ $32, SI
	SUBQ $8, CX

maxtail:
	// The lanes past n are filled with x[0], which cannot change the maximum.
	TESTQ CX, CX
	JZ maxreduce
	TAILMASK
	VMASKMOVPS (SI), Y7, Y4
	VBLENDVPS Y7, Y4, Y1, Y4
	VMAXPS Y4, Y0, Y0
	VCMPPS $3, Y4, Y4, Y6
	VORPS Y6, Y3, Y3

maxreduce:
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	VPTEST Y3, Y3
	JZ maxdone
	VPCMPEQD X0, X0, X0 // a NaN was seen: return NaN (all-ones bits)

maxdone:
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET
