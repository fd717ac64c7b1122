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
// gives the loop's values bit for bit.
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
	elementwise("scalemul", n, i, func(disp int, vec func() reg.VecVirtual, one bool) {
		at := func(base reg.Register) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: disp} }
		d := vec()
		if one {
			VMULSS(at(x), ss, d)
			VMULSS(at(g), d, d)
			VMOVSS(d, at(dst))
			return
		}
		VMULPS(at(x), sv, d)
		VMULPS(at(g), d, d)
		VMOVUPS(d, at(dst))
	})
}

// mulShift writes mulShiftAVX2: y[i] = a[i]·(y[i] − c), the difference rounded to float32 before the
// product, as the scalar loop computes it (the softmax's backward: a row of weights times its gradient less
// their dot product).
func mulShift() {
	TEXT("mulShiftAVX2", NOSPLIT, "func(y, a *float32, n int, c float32)")
	Doc("mulShiftAVX2 sets y[i] = a[i]·(y[i] − c) for i < n.")
	y := Load(Param("y"), GP64())
	a := Load(Param("a"), GP64())
	n := Load(Param("n"), GP64())
	cs := Load(Param("c"), XMM())
	cv := YMM()
	VBROADCASTSS(cs, cv)
	i := GP64()
	XORQ(i, i)
	elementwise("mulshift", n, i, func(disp int, vec func() reg.VecVirtual, one bool) {
		at := func(base reg.Register) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: disp} }
		d := vec()
		if one {
			VMOVSS(at(y), d)
			VSUBSS(cs, d, d)
			VMULSS(at(a), d, d)
			VMOVSS(d, at(y))
			return
		}
		VMOVUPS(at(y), d)
		VSUBPS(cv, d, d)
		VMULPS(at(a), d, d)
		VMOVUPS(d, at(y))
	})
}

// normBack writes normBackAVX2, an RMSNorm row's input gradient: dx[i] += inv·dyg[i] − c·x[i], each
// product and the difference rounded to float32 in that order, as the scalar loop computes it (dyg the
// output gradient times the gains, inv the row's 1/rms, c = inv³·(dyg·x)/dim).
func normBack() {
	TEXT("normBackAVX2", NOSPLIT, "func(dx, dyg, x *float32, n int, inv, c float32)")
	Doc("normBackAVX2 sets dx[i] += inv·dyg[i] − c·x[i] for i < n.")
	dx := Load(Param("dx"), GP64())
	dyg := Load(Param("dyg"), GP64())
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	invs := Load(Param("inv"), XMM())
	cs := Load(Param("c"), XMM())
	invv, cv := YMM(), YMM()
	VBROADCASTSS(invs, invv)
	VBROADCASTSS(cs, cv)
	i := GP64()
	XORQ(i, i)
	elementwise("normback", n, i, func(disp int, vec func() reg.VecVirtual, one bool) {
		at := func(base reg.Register) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: disp} }
		d, t := vec(), vec()
		if one {
			VMULSS(at(dyg), invs, d)
			VMULSS(at(x), cs, t)
			VSUBSS(t, d, d)
			VADDSS(at(dx), d, d)
			VMOVSS(d, at(dx))
			return
		}
		VMULPS(at(dyg), invv, d)
		VMULPS(at(x), cv, t)
		VSUBPS(t, d, d)
		VADDPS(at(dx), d, d)
		VMOVUPS(d, at(dx))
	})
}

// rotateHalf writes rotateHalfAVX2 and rotateHalfInvAVX2, rotary embeddings in the rotate-half layout over
// the heads of one row: for each head's halves lo and hi of half values (a multiple of 8), lo' = lo·cos −
// hi·sin and hi' = hi·cos + lo·sin (the inverse, the backward pass: lo' = lo·cos + hi·sin, hi' = hi·cos −
// lo·sin), each product rounded to float32 before the sum, as the scalar loop computes them.
func rotateHalf() {
	for _, inverse := range []bool{false, true} {
		name, doc := "rotateHalfAVX2", "rotates"
		if inverse {
			name, doc = "rotateHalfInvAVX2", "applies the inverse rotation to"
		}
		TEXT(name, NOSPLIT, "func(x, cs, sn *float32, heads, half int)")
		Doc(name+" "+doc+" heads consecutive heads of 2·half values at x (half a multiple of 8), cs and sn",
			"holding half cosines and sines.")
		x := Load(Param("x"), GP64())
		cs := Load(Param("cs"), GP64())
		sn := Load(Param("sn"), GP64())
		heads := Load(Param("heads"), GP64())
		half := Load(Param("half"), GP64())
		hi := GP64()
		i := GP64()
		Label(name + "_head")
		TESTQ(heads, heads)
		JZ(LabelRef(name + "_done"))
		LEAQ(Mem{Base: x, Index: half, Scale: 4}, hi)
		XORQ(i, i)
		Label(name + "_8")
		CMPQ(i, half)
		JGE(LabelRef(name + "_next"))
		a, b, c, s := YMM(), YMM(), YMM(), YMM()
		ac, bs, bc, as := YMM(), YMM(), YMM(), YMM()
		VMOVUPS(Mem{Base: x, Index: i, Scale: 4}, a)
		VMOVUPS(Mem{Base: hi, Index: i, Scale: 4}, b)
		VMOVUPS(Mem{Base: cs, Index: i, Scale: 4}, c)
		VMOVUPS(Mem{Base: sn, Index: i, Scale: 4}, s)
		VMULPS(c, a, ac)
		VMULPS(s, b, bs)
		VMULPS(c, b, bc)
		VMULPS(s, a, as)
		if inverse {
			VADDPS(bs, ac, ac) // a·c + b·s
			VSUBPS(as, bc, bc) // b·c − a·s
		} else {
			VSUBPS(bs, ac, ac) // a·c − b·s
			VADDPS(as, bc, bc) // b·c + a·s
		}
		VMOVUPS(ac, Mem{Base: x, Index: i, Scale: 4})
		VMOVUPS(bc, Mem{Base: hi, Index: i, Scale: 4})
		ADDQ(Imm(8), i)
		JMP(LabelRef(name + "_8"))
		Label(name + "_next")
		LEAQ(Mem{Base: hi, Index: half, Scale: 4}, x)
		DECQ(heads)
		JMP(LabelRef(name + "_head"))
		Label(name + "_done")
		VZEROUPPER()
		RET()
	}
}

// elementwise writes an AVX2 loop over n float32 values, 32 an iteration, then 8, then one: body emits the
// operations on one vector of values at byte offset disp of every array (idx: the value index register),
// with YMM vectors or, for the single values at the end, XMM ones holding one value.
func elementwise(name string, n, idx reg.Register, body func(disp int, vec func() reg.VecVirtual, one bool)) {
	end := GP64()
	Label(name + "_32")
	MOVQ(idx, end)
	ADDQ(Imm(32), end)
	CMPQ(end, n)
	JG(LabelRef(name + "_8"))
	for u := range 4 {
		body(32*u, YMM, false)
	}
	ADDQ(Imm(32), idx)
	JMP(LabelRef(name + "_32"))
	Label(name + "_8")
	MOVQ(idx, end)
	ADDQ(Imm(8), end)
	CMPQ(end, n)
	JG(LabelRef(name + "_one"))
	body(0, YMM, false)
	ADDQ(Imm(8), idx)
	JMP(LabelRef(name + "_8"))
	Label(name + "_one")
	CMPQ(idx, n)
	JGE(LabelRef(name + "_done"))
	body(0, XMM, true)
	INCQ(idx)
	JMP(LabelRef(name + "_one"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// mulProd writes mulProdAVX2: a[i] = a[i]·(x[i]·y[i]), the inner product rounded first, as the gated MLP's
// scalar loop computes act(g)·(g·u) over the activation's row (SwiGLU's and GeGLU's last step).
func mulProd() {
	TEXT("mulProdAVX2", NOSPLIT, "func(a, x, y *float32, n int)")
	Doc("mulProdAVX2 sets a[i] = a[i]·(x[i]·y[i]) for i < n.")
	a := Load(Param("a"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	i := GP64()
	XORQ(i, i)
	elementwise("mulprod", n, i, func(disp int, vec func() reg.VecVirtual, one bool) {
		at := func(base reg.Register) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: disp} }
		d := vec()
		if one {
			VMOVSS(at(x), d)
			VMULSS(at(y), d, d)
			VMULSS(at(a), d, d)
			VMOVSS(d, at(a))
			return
		}
		VMOVUPS(at(x), d)
		VMULPS(at(y), d, d)
		VMULPS(at(a), d, d)
		VMOVUPS(d, at(a))
	})
}

// swigluGrad writes swigluGradAVX2, SwiGLU's backward over a row given σ(g) in s: u = (da·g)·s and
// g = ((da·u)·s)·(1 + g·(1 − s)), each operation rounded in the scalar loop's order.
func swigluGrad() {
	TEXT("swigluGradAVX2", NOSPLIT, "func(gate, u, da, s *float32, n int)")
	Doc("swigluGradAVX2 sets u[i] = da[i]·gate[i]·s[i] and gate[i] = da[i]·u[i]·s[i]·(1 + gate[i]·(1 − s[i]))",
		"for i < n (u and gate the values before), s[i] = σ(gate[i]).")
	g := Load(Param("gate"), GP64()) // "g" names the goroutine register in Go assembly
	u := Load(Param("u"), GP64())
	da := Load(Param("da"), GP64())
	s := Load(Param("s"), GP64())
	n := Load(Param("n"), GP64())
	onev, onex := YMM(), XMM()
	c := GP32()
	MOVL(U32(0x3f800000), c)
	MOVD(c, onex)
	VBROADCASTSS(onex, onev)
	i := GP64()
	XORQ(i, i)
	elementwise("swiglugrad", n, i, func(disp int, vec func() reg.VecVirtual, one bool) {
		at := func(base reg.Register) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: disp} }
		gv, sv, t1, t2, t3 := vec(), vec(), vec(), vec(), vec()
		load, mul, add, sub, store := VMOVUPS, VMULPS, VADDPS, VSUBPS, VMOVUPS
		ones := reg.VecVirtual(onev)
		if one {
			load, mul, add, sub, store = VMOVSS, VMULSS, VADDSS, VSUBSS, VMOVSS
			ones = onex
		}
		load(at(g), gv)
		load(at(s), sv)
		load(at(da), t1)
		mul(gv, t1, t2)    // da·g
		mul(sv, t2, t2)    // (da·g)·s
		mul(at(u), t1, t1) // da·u (u as it was)
		store(t2, at(u))
		mul(sv, t1, t1)   // (da·u)·s
		sub(sv, ones, t3) // 1 − s
		mul(gv, t3, t3)   // g·(1 − s)
		add(ones, t3, t3) // 1 + g·(1 − s)
		mul(t3, t1, t1)
		store(t1, at(g))
	})
}
