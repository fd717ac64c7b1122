package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// attendScores writes attendScoresAVX2: one query's scores against n keys of a head, s[t] = scale·(q·k_t).
// A decoding step attends each sequence's few query rows over a few hundred cached positions: as products
// of 3 rows (Sgemm) they went to the naive loop or the blocked driver's packing, a fifth of sampling's
// time for arithmetic worth a fiftieth. Here eight keys are taken at once, each its own accumulator, every
// query vector loaded once for the eight; the eight are summed across their lanes together (two rounds of
// horizontal adds and one of the halves) into the eight scores, stored as one vector. The last n mod 8
// keys go one at a time. hd must be a multiple of 8.
func attendScores() {
	TEXT("attendScoresAVX2", NOSPLIT, "func(q, k *float32, hd, n int, s *float32, scale float32)")
	Doc("attendScoresAVX2 sets s[t] = scale·Σ_{c<hd} q[c]·k[t·hd+c] for t < n; hd is a multiple of 8.")
	q := Load(Param("q"), GP64())
	k := Load(Param("k"), GP64())
	hd := Load(Param("hd"), GP64())
	n := Load(Param("n"), GP64())
	s := Load(Param("s"), GP64())
	scs := Load(Param("scale"), XMM())
	scv := YMM()
	VBROADCASTSS(scs, scv)
	hd4 := GP64() // a key's bytes
	MOVQ(hd, hd4)
	SHLQ(Imm(2), hd4)
	r3 := GP64()
	LEAQ(Mem{Base: hd4, Index: hd4, Scale: 2}, r3)
	p0, p4, qp, cnt := GP64(), GP64(), GP64(), GP64()

	Label("scores_8")
	CMPQ(n, Imm(8))
	JL(LabelRef("scores_one"))
	acc := make([]reg.VecVirtual, 8)
	for j := range acc {
		acc[j] = YMM()
		VXORPS(acc[j], acc[j], acc[j])
	}
	MOVQ(k, p0)
	LEAQ(Mem{Base: k, Index: hd4, Scale: 4}, p4)
	MOVQ(q, qp)
	MOVQ(hd, cnt)
	Label("scores_8_c")
	qv := YMM()
	VMOVUPS(Mem{Base: qp}, qv)
	rows := []Mem{{Base: p0}, {Base: p0, Index: hd4, Scale: 1}, {Base: p0, Index: hd4, Scale: 2}, {Base: p0, Index: r3, Scale: 1},
		{Base: p4}, {Base: p4, Index: hd4, Scale: 1}, {Base: p4, Index: hd4, Scale: 2}, {Base: p4, Index: r3, Scale: 1}}
	for j, m := range rows {
		VFMADD231PS(m, qv, acc[j])
	}
	ADDQ(Imm(32), p0)
	ADDQ(Imm(32), p4)
	ADDQ(Imm(32), qp)
	SUBQ(Imm(8), cnt)
	JNZ(LabelRef("scores_8_c"))
	// acc[j]'s lanes summed into lane j: pairs, then quadruples (each 128-bit half holding four keys'
	// partial sums), then the halves added.
	for j := 0; j < 8; j += 2 {
		VHADDPS(acc[j+1], acc[j], acc[j])
	}
	VHADDPS(acc[2], acc[0], acc[0])
	VHADDPS(acc[6], acc[4], acc[4])
	lo, hi := YMM(), YMM()
	VPERM2F128(Imm(0x20), acc[4], acc[0], lo)
	VPERM2F128(Imm(0x31), acc[4], acc[0], hi)
	VADDPS(hi, lo, lo)
	VMULPS(scv, lo, lo)
	VMOVUPS(lo, Mem{Base: s})
	LEAQ(Mem{Base: k, Index: hd4, Scale: 8}, k)
	ADDQ(Imm(32), s)
	SUBQ(Imm(8), n)
	JMP(LabelRef("scores_8"))

	Label("scores_one")
	TESTQ(n, n)
	JZ(LabelRef("scores_done"))
	one := YMM()
	VXORPS(one, one, one)
	MOVQ(k, p0)
	MOVQ(q, qp)
	MOVQ(hd, cnt)
	Label("scores_one_c")
	kv := YMM()
	VMOVUPS(Mem{Base: p0}, kv)
	VFMADD231PS(Mem{Base: qp}, kv, one)
	ADDQ(Imm(32), p0)
	ADDQ(Imm(32), qp)
	SUBQ(Imm(8), cnt)
	JNZ(LabelRef("scores_one_c"))
	h := XMM()
	VEXTRACTF128(Imm(1), one, h)
	sum := one.AsX()
	VADDPS(h, sum, sum)
	VHADDPS(sum, sum, sum)
	VHADDPS(sum, sum, sum)
	VMULSS(scs, sum, sum)
	VMOVSS(sum, Mem{Base: s})
	ADDQ(hd4, k)
	ADDQ(Imm(4), s)
	DECQ(n)
	JMP(LabelRef("scores_one"))
	Label("scores_done")
	VZEROUPPER()
	RET()
}

// attendWeigh writes attendWeigh64AVX2: 64 columns of a query's attention output, the weighted sum of n
// value rows (stride ldv). The 64 columns are eight accumulators that stay in registers over every row;
// each row's weight is broadcast once and multiplies its eight vectors straight from memory. Two rows an
// iteration, then the last one.
func attendWeigh() {
	TEXT("attendWeigh64AVX2", NOSPLIT, "func(w, v *float32, ldv, n int, out *float32, add bool)")
	Doc("attendWeigh64AVX2 sets out[c] = Σ_{t<n} w[t]·v[t·ldv+c] for c < 64, plus out[c]'s value when add.")
	w := Load(Param("w"), GP64())
	v := Load(Param("v"), GP64())
	ldv := Load(Param("ldv"), GP64())
	n := Load(Param("n"), GP64())
	out := Load(Param("out"), GP64())
	add := Load(Param("add"), GP8())
	SHLQ(Imm(2), ldv)
	acc := make([]reg.VecVirtual, 8)
	for c := range acc {
		acc[c] = YMM()
		VXORPS(acc[c], acc[c], acc[c])
	}
	TESTB(add, add)
	JZ(LabelRef("weigh_2"))
	for c := range acc {
		VMOVUPS(Mem{Base: out, Disp: 32 * c}, acc[c])
	}
	Label("weigh_2")
	CMPQ(n, Imm(2))
	JL(LabelRef("weigh_one"))
	b0, b1 := YMM(), YMM()
	VBROADCASTSS(Mem{Base: w}, b0)
	VBROADCASTSS(Mem{Base: w, Disp: 4}, b1)
	for c := range acc {
		VFMADD231PS(Mem{Base: v, Disp: 32 * c}, b0, acc[c])
	}
	for c := range acc {
		VFMADD231PS(Mem{Base: v, Index: ldv, Scale: 1, Disp: 32 * c}, b1, acc[c])
	}
	ADDQ(Imm(8), w)
	LEAQ(Mem{Base: v, Index: ldv, Scale: 2}, v)
	SUBQ(Imm(2), n)
	JMP(LabelRef("weigh_2"))
	Label("weigh_one")
	TESTQ(n, n)
	JZ(LabelRef("weigh_done"))
	VBROADCASTSS(Mem{Base: w}, b0)
	for c := range acc {
		VFMADD231PS(Mem{Base: v, Disp: 32 * c}, b0, acc[c])
	}
	Label("weigh_done")
	for c := range acc {
		VMOVUPS(acc[c], Mem{Base: out, Disp: 32 * c})
	}
	VZEROUPPER()
	RET()
}
