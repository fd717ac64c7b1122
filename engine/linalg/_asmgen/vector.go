package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// dotShift writes dotShiftAVX2: Σ x[i]·(y[i] − c) over n values, each y[i] − c rounded to float32 before
// the product, as a loop would compute it from y shifted into memory first. The entropy of a softmax row
// (train.Stats) is Σ e·(logit − max); with the shifted row written out and read back it was a scalar pass
// over 150,000 logits a row, more than one of its vectorised exponentials. Four independent chains of 8
// lanes take 32 values an iteration, then 8 at a time, then one; the chains are summed at the end.
func dotShift() {
	TEXT("dotShiftAVX2", NOSPLIT, "func(x, y *float32, n int, c float32) float32")
	Doc("dotShiftAVX2 returns the sum over i < n of x[i]·(y[i] − c).")
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	cs := Load(Param("c"), XMM())
	cv := YMM()
	VBROADCASTSS(cs, cv)
	acc := make([]reg.VecVirtual, 4)
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	i := GP64()
	XORQ(i, i)
	end := GP64()
	Label("dotshift_32")
	MOVQ(i, end)
	ADDQ(Imm(32), end)
	CMPQ(end, n)
	JG(LabelRef("dotshift_8"))
	for u := range 4 {
		d := YMM()
		VMOVUPS(Mem{Base: y, Index: i, Scale: 4, Disp: 32 * u}, d)
		VSUBPS(cv, d, d)
		VFMADD231PS(Mem{Base: x, Index: i, Scale: 4, Disp: 32 * u}, d, acc[u])
	}
	ADDQ(Imm(32), i)
	JMP(LabelRef("dotshift_32"))
	Label("dotshift_8")
	MOVQ(i, end)
	ADDQ(Imm(8), end)
	CMPQ(end, n)
	JG(LabelRef("dotshift_tail"))
	d := YMM()
	VMOVUPS(Mem{Base: y, Index: i, Scale: 4}, d)
	VSUBPS(cv, d, d)
	VFMADD231PS(Mem{Base: x, Index: i, Scale: 4}, d, acc[0])
	ADDQ(Imm(8), i)
	JMP(LabelRef("dotshift_8"))
	Label("dotshift_tail")
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	hi := XMM()
	VEXTRACTF128(Imm(1), acc[0], hi)
	sum := acc[0].AsX()
	VADDPS(hi, sum, sum)
	VHADDPS(sum, sum, sum)
	VHADDPS(sum, sum, sum)
	Label("dotshift_one")
	CMPQ(i, n)
	JGE(LabelRef("dotshift_done"))
	t := XMM()
	VMOVSS(Mem{Base: y, Index: i, Scale: 4}, t)
	VSUBSS(cs, t, t)
	VFMADD231SS(Mem{Base: x, Index: i, Scale: 4}, t, sum)
	INCQ(i)
	JMP(LabelRef("dotshift_one"))
	Label("dotshift_done")
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}

// scaleMul writes scaleMulAVX2: dst[i] = (x[i]·s)·g[i], each product rounded to float32 in that order, as
// the scalar loop computes it (an RMSNorm row: x times its 1/rms, times the gains), so that the vector form
// gives the loop's values bit for bit. 32 values an iteration, then 8, then one.
func scaleMul() {
	TEXT("scaleMulAVX2", NOSPLIT, "func(dst, x, w *float32, n int, s float32)")
	Doc("scaleMulAVX2 sets dst[i] = (x[i]·s)·w[i] for i < n.")
	dst := Load(Param("dst"), GP64())
	x := Load(Param("x"), GP64())
	g := Load(Param("w"), GP64()) // "g" names the goroutine register in Go assembly
	n := Load(Param("n"), GP64())
	ss := Load(Param("s"), XMM())
	sv := YMM()
	VBROADCASTSS(ss, sv)
	i := GP64()
	XORQ(i, i)
	end := GP64()
	Label("scalemul_32")
	MOVQ(i, end)
	ADDQ(Imm(32), end)
	CMPQ(end, n)
	JG(LabelRef("scalemul_8"))
	for u := range 4 {
		d := YMM()
		VMULPS(Mem{Base: x, Index: i, Scale: 4, Disp: 32 * u}, sv, d)
		VMULPS(Mem{Base: g, Index: i, Scale: 4, Disp: 32 * u}, d, d)
		VMOVUPS(d, Mem{Base: dst, Index: i, Scale: 4, Disp: 32 * u})
	}
	ADDQ(Imm(32), i)
	JMP(LabelRef("scalemul_32"))
	Label("scalemul_8")
	MOVQ(i, end)
	ADDQ(Imm(8), end)
	CMPQ(end, n)
	JG(LabelRef("scalemul_one"))
	d := YMM()
	VMULPS(Mem{Base: x, Index: i, Scale: 4}, sv, d)
	VMULPS(Mem{Base: g, Index: i, Scale: 4}, d, d)
	VMOVUPS(d, Mem{Base: dst, Index: i, Scale: 4})
	ADDQ(Imm(8), i)
	JMP(LabelRef("scalemul_8"))
	Label("scalemul_one")
	CMPQ(i, n)
	JGE(LabelRef("scalemul_done"))
	t := XMM()
	VMULSS(Mem{Base: x, Index: i, Scale: 4}, ss, t)
	VMULSS(Mem{Base: g, Index: i, Scale: 4}, t, t)
	VMOVSS(t, Mem{Base: dst, Index: i, Scale: 4})
	INCQ(i)
	JMP(LabelRef("scalemul_one"))
	Label("scalemul_done")
	VZEROUPPER()
	RET()
}
