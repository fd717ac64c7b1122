package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// packA6 writes packA6AVX2: the AVX2 kernel's 6-row panel of a row-major A, 8 k-steps at a time. Each step
// loads 8 values from each of the 6 rows, transposes the 6×8 block in registers (as an 8×8 one whose last two
// rows are zero) and stores the 8 groups of 6 with overlapping 8-wide stores, each writing 2 zeros that the
// next overwrites; so the last store reaches 2 values past the chunk, and the caller leaves at least one
// more chunk's room (or packs the last chunk itself). Packing was a scalar loop, 12–17% of a LoRA step.
func packA6() {
	TEXT("packA6AVX2", NOSPLIT, "func(dst, src *float32, chunks, lda int)")
	Doc("packA6AVX2 packs chunks×8 k-steps of 6 rows of A (row stride lda) into dst as groups of 6 values, writing",
		"2 values past the last group.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	chunks := Load(Param("chunks"), GP64())
	lda := Load(Param("lda"), GP64())
	SHLQ(Imm(2), lda)
	rows := make([]reg.GPVirtual, 6)
	for i := range rows {
		rows[i] = GP64()
		if i == 0 {
			MOVQ(src, rows[i])
		} else {
			LEAQ(Mem{Base: rows[i-1], Index: lda, Scale: 1}, rows[i])
		}
	}
	zero := YMM()
	VXORPS(zero, zero, zero)
	off := GP64()
	XORQ(off, off)
	Label("packA6_loop")
	TESTQ(chunks, chunks)
	JZ(LabelRef("packA6_done"))
	r := make([]reg.VecVirtual, 6)
	for i := range r {
		r[i] = YMM()
		VMOVUPS(Mem{Base: rows[i], Index: off, Scale: 1}, r[i])
	}
	for col, o := range transpose8(append(r, zero, zero)) { // rows 6 and 7 are zero
		VMOVUPS(o, Mem{Base: dst, Disp: 24 * col})
	}
	ADDQ(Imm(32), off)
	ADDQ(Imm(192), dst)
	DECQ(chunks)
	JMP(LabelRef("packA6_loop"))
	Label("packA6_done")
	VZEROUPPER()
	RET()
}

// transpose8 transposes the 8 × 8 float32 block held a row a register in r and returns its columns, a
// column a register: unpack pairs of rows, shuffle their quads, then swap the 128-bit halves.
func transpose8(r []reg.VecVirtual) []reg.VecVirtual {
	t := make([]reg.VecVirtual, 8)
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = YMM(), YMM()
		VUNPCKLPS(r[i+1], r[i], t[i])
		VUNPCKHPS(r[i+1], r[i], t[i+1])
	}
	// s[0..3]: columns 0–3 of rows 0–3 (each lane half: columns 0–3 or 4–7); s[4..7] the same of rows 4–7.
	s := make([]reg.VecVirtual, 8)
	for h := 0; h < 8; h += 4 {
		for i := range 4 {
			s[h+i] = YMM()
		}
		VSHUFPS(Imm(0x44), t[h+2], t[h], s[h])
		VSHUFPS(Imm(0xEE), t[h+2], t[h], s[h+1])
		VSHUFPS(Imm(0x44), t[h+3], t[h+1], s[h+2])
		VSHUFPS(Imm(0xEE), t[h+3], t[h+1], s[h+3])
	}
	cols := make([]reg.VecVirtual, 8)
	for col := range cols {
		cols[col] = YMM()
		lo, hi := s[col%4], s[col%4+4]
		if col < 4 {
			VPERM2F128(Imm(0x20), hi, lo, cols[col])
		} else {
			VPERM2F128(Imm(0x31), hi, lo, cols[col])
		}
	}
	return cols
}

// widenT8 writes widenT8x8BF16AVX2: an 8 × 8 block of bfloat16 values transposed and widened to float32,
// dst[t*ldd+c] = src[c*lds+t]. Each of the 8 source rows (8 values, 16 bytes) is zero-extended and shifted
// into the top half of 8 float32 lanes, and the block is transposed in registers as packA6AVX2 transposes
// its 6 × 8 one (transpose8). SgemmPackedBF16N reads a PackedBF16 (stored for x·Wᵀ, 16 of W's rows per step of
// contraction values) along W's rows for dy·W; one value at a time that was 5% of an AVX2 training step.
func widenT8() {
	TEXT("widenT8x8BF16AVX2", NOSPLIT, "func(dst *float32, ldd int, src *uint16, lds int)")
	Doc("widenT8x8BF16AVX2 sets dst[t*ldd+c] to the float32 value of the bfloat16 src[c*lds+t], for t, c < 8.")
	dst := Load(Param("dst"), GP64())
	ldd := Load(Param("ldd"), GP64())
	src := Load(Param("src"), GP64())
	lds := Load(Param("lds"), GP64())
	SHLQ(Imm(2), ldd)
	SHLQ(Imm(1), lds)
	r := make([]reg.VecVirtual, 8)
	for i := range r {
		r[i] = YMM()
		VPMOVZXWD(Mem{Base: src}, r[i])
		VPSLLD(Imm(16), r[i], r[i])
		if i < 7 {
			ADDQ(lds, src)
		}
	}
	for col, o := range transpose8(r) {
		VMOVUPS(o, Mem{Base: dst})
		if col < 7 {
			ADDQ(ldd, dst)
		}
	}
	VZEROUPPER()
	RET()
}

// widenTPanel writes widenTPanelBF16AVX2: the blocked driver's float32 panel of 16 columns of dy·W's op(B) = W,
// 16 k-steps (W's rows) at a time, from a PackedBF16 whose panels are 16 of W's rows wide. For each 16 rows
// (a stored panel) and each half of 8, the 16 columns are two 8 × 8 blocks, transposed and widened as in
// widenT8x8BF16AVX2; dst takes 16 k-steps of 16 values, src moves on by stride values to the next stored panel.
// Calling widenT8x8BF16AVX2 per 8 × 8 block from Go cost more than the block's own work (2.3% of a Zen 3
// 135M RL step in the loop around it, 1.6% in the blocks).
func widenTPanel() {
	TEXT("widenTPanelBF16AVX2", NOSPLIT, "func(dst *float32, src *uint16, pairs, stride int)")
	Doc("widenTPanelBF16AVX2 sets dst[t*16+c] to the float32 value of the bfloat16 src[(t/16)*stride+c*16+t%16],",
		"for t < 16·pairs and c < 16.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	pairs := Load(Param("pairs"), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(Imm(1), stride)
	Label("widenTPanel_loop")
	TESTQ(pairs, pairs)
	JZ(LabelRef("widenTPanel_done"))
	for half := range 2 { // W's rows 8·half .. 8·half+7 of the stored panel: k-steps of dst
		for cb := range 2 { // columns 8·cb .. 8·cb+7
			r := make([]reg.VecVirtual, 8)
			for c := range r {
				r[c] = YMM()
				VPMOVZXWD(Mem{Base: src, Disp: 32*(8*cb+c) + 16*half}, r[c])
				VPSLLD(Imm(16), r[c], r[c])
			}
			for t, o := range transpose8(r) {
				VMOVUPS(o, Mem{Base: dst, Disp: 4 * ((8*half+t)*16 + 8*cb)})
			}
		}
	}
	ADDQ(stride, src)
	ADDQ(U32(4*16*16), dst)
	DECQ(pairs)
	JMP(LabelRef("widenTPanel_loop"))
	Label("widenTPanel_done")
	VZEROUPPER()
	RET()
}

// gatherTPanel writes gatherTPanelBF16AVX2: widenTPanelBF16AVX2's panel left in bfloat16, for dy·W on the
// bfloat16 tiles (sgemmBlockedBF16N): half the bytes written here, and half read by every tile, where the
// float32 panel of 16 × 576 values (36 KiB) left L1 to the A panel and streamed from L2 and beyond. A column
// of a stored panel (16 of W's rows: 16 k-steps of dst) is one 32-byte load; 8 of them are two 8 × 8 blocks
// of 16-bit values, one in each 128-bit lane, transposed in-lane (words, double words, quad words) into 8
// k-steps' 8 columns each, whose two lanes are k-steps t and 8 + t. It writes gatherTPanel32BF16AVX2 too,
// the same over AVX-512's 32-wide panels (sgemmPackedBF16NRows): each stored panel is 2 × 4 such blocks of
// 16 k-steps by 8 columns.
func gatherTPanel() {
	for _, width := range []int{16, 32} {
		gatherTPanelWidth(width)
	}
}

func gatherTPanelWidth(width int) {
	name := "gatherTPanelBF16AVX2"
	if width != 16 {
		name = fmt.Sprintf("gatherTPanel%dBF16AVX2", width)
	}
	TEXT(name, NOSPLIT, "func(dst *uint16, src *uint16, pairs, stride int)")
	Doc(fmt.Sprintf("%s sets dst[t*%d+c] = src[(t/%d)*stride+c*%d+t%%%d] for t < %d·pairs and c < %d.", name, width, width, width, width, width, width))
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	pairs := Load(Param("pairs"), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(Imm(1), stride)
	loop, done := name+"_loop", name+"_done"
	Label(loop)
	TESTQ(pairs, pairs)
	JZ(LabelRef(done))
	for th := range width / 16 { // k-steps 16·th .. 16·th+15: the half of each stored column loaded
		for cb := range width / 8 { // dst columns 8·cb .. 8·cb+7: stored columns
			r := make([]reg.VecVirtual, 8)
			for c := range r {
				r[c] = YMM()
				VMOVDQU(Mem{Base: src, Disp: 2 * (width*(8*cb+c) + 16*th)}, r[c])
			}
			w := make([]reg.VecVirtual, 8) // words of row pairs interleaved
			for i := 0; i < 8; i += 2 {
				w[i], w[i+1] = YMM(), YMM()
				VPUNPCKLWD(r[i+1], r[i], w[i])
				VPUNPCKHWD(r[i+1], r[i], w[i+1])
			}
			d := make([]reg.VecVirtual, 8) // then double words of pairs of pairs
			for _, q := range [][2]int{{0, 2}, {1, 3}, {4, 6}, {5, 7}} {
				lo, hi := YMM(), YMM()
				VPUNPCKLDQ(w[q[1]], w[q[0]], lo)
				VPUNPCKHDQ(w[q[1]], w[q[0]], hi)
				d[q[0]], d[q[1]] = lo, hi
			}
			// d[0]: k-steps 0, 1 of columns 0–3; d[2]: 2, 3; d[1]: 4, 5; d[3]: 6, 7; d[4..7] the same of columns 4–7.
			for t, q := range [][2]int{{0, 4}, {2, 6}, {1, 5}, {3, 7}} {
				lo, hi := YMM(), YMM()
				VPUNPCKLQDQ(d[q[1]], d[q[0]], lo) // k-step 2t (lane 0) and 8 + 2t (lane 1)
				VPUNPCKHQDQ(d[q[1]], d[q[0]], hi) // 2t + 1 and 8 + 2t + 1
				for j, o := range []reg.VecVirtual{lo, hi} {
					step := 16*th + 2*t + j
					VMOVDQU(o.AsX(), Mem{Base: dst, Disp: 2 * (step*width + 8*cb)})
					VEXTRACTI128(Imm(1), o, Mem{Base: dst, Disp: 2 * ((8+step)*width + 8*cb)})
				}
			}
		}
	}
	ADDQ(stride, src)
	ADDQ(U32(2*width*width), dst)
	DECQ(pairs)
	JMP(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
}

// packBT16 writes packBT16AVX2: the AVX2 kernel's 16-wide panel of a transposed op(B) = Bᵀ (the attention's
// keys and values), 8 k-steps at a time: 8 values from each of B's 16 rows, as two 8 × 8 blocks transposed in
// registers (transpose8). The generic packer scattered one value at a time (1.1% of a Zen 3 135M RL step).
func packBT16() {
	TEXT("packBT16AVX2", NOSPLIT, "func(dst, src *float32, blocks, ldb int)")
	Doc("packBT16AVX2 sets dst[p*16+j] = src[j*ldb+p] for j < 16 and p < 8·blocks.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	blocks := Load(Param("blocks"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(Imm(2), ldb)
	row := GP64()
	Label("packBT16_loop")
	TESTQ(blocks, blocks)
	JZ(LabelRef("packBT16_done"))
	MOVQ(src, row)
	for half := range 2 { // B's rows 8·half .. 8·half+7: columns of the panel
		r := make([]reg.VecVirtual, 8)
		for i := range r {
			r[i] = YMM()
			VMOVUPS(Mem{Base: row}, r[i])
			ADDQ(ldb, row)
		}
		for p, o := range transpose8(r) {
			VMOVUPS(o, Mem{Base: dst, Disp: 4 * (16*p + 8*half)})
		}
	}
	ADDQ(Imm(32), src)
	ADDQ(U32(4*16*8), dst)
	DECQ(blocks)
	JMP(LabelRef("packBT16_loop"))
	Label("packBT16_done")
	VZEROUPPER()
	RET()
}

// copyGroups writes copyGroups6AVX2 and copyGroups16AVX2: n runs of w float32 values, one every ld values of
// src, into dst one after another: the blocked kernel's panel of op(A) = Aᵀ (a group of 6 is a run of a row
// of A) and of a row-major B (a group of 16 is a run of a row of B). Go copied them value by value (a copy call
// cost more than the 24 or 64 bytes): 1.2% of an AVX2 RL step's CPU at SmolLM2-135M's shape, in the
// attention's products. A run is copied in 32-, 16- and 8-byte moves, never reading past it.
func copyGroups() {
	for _, w := range []int{6, 16} {
		name := fmt.Sprintf("copyGroups%dAVX2", w)
		TEXT(name, NOSPLIT, "func(dst, src *float32, n, ld int)")
		Doc(fmt.Sprintf("%s copies n ≥ 1 runs of %d float32 values, src[p·ld:p·ld+%d] for p < n, to dst one after another.", name, w, w))
		dst := Load(Param("dst"), GP64())
		src := Load(Param("src"), GP64())
		n := Load(Param("n"), GP64())
		ld := Load(Param("ld"), GP64())
		SHLQ(Imm(2), ld)
		Label(name + "_loop")
		switch w {
		case 16:
			x, y := YMM(), YMM()
			VMOVUPS(Mem{Base: src}, x)
			VMOVUPS(Mem{Base: src, Disp: 32}, y)
			VMOVUPS(x, Mem{Base: dst})
			VMOVUPS(y, Mem{Base: dst, Disp: 32})
		case 6:
			x, q := XMM(), GP64()
			VMOVUPS(Mem{Base: src}, x)
			MOVQ(Mem{Base: src, Disp: 16}, q)
			VMOVUPS(x, Mem{Base: dst})
			MOVQ(q, Mem{Base: dst, Disp: 16})
		}
		ADDQ(ld, src)
		ADDQ(Imm(uint64(4*w)), dst)
		DECQ(n)
		JNZ(LabelRef(name + "_loop"))
		VZEROUPPER()
		RET()
	}
}
