package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The AMX kernel (amx-bf16): one TDPBF16PS multiplies a 16 × 32 tile of bfloat16 activations by a 32 × 16
// tile of bfloat16 weights into a 16 × 16 float32 tile, 16,384 multiply-adds per instruction, against the
// 32 of a VDPBF16PS or 16 of an FMA. Neither Go's assembler nor avo knows the tile instructions, so the kernel
// is written here as text with fixed registers and the instructions as bytes (checked against GNU as and
// objdump: ldtilecfg (%rax) is c4 e2 78 49 00, tileloadd (%rsi,%r10,1),%tmm4 is c4 a2 7b 4b 24 16,
// tdpbf16ps %tmm6,%tmm4,%tmm0 is c4 e2 4a 5c c4).

var amxOut = flag.String("amxout", "", "write the AMX kernel (assembly) to this file")
var amxStubs = flag.String("amxstubs", "", "write its Go declaration to this file")

// Go's register numbers in the x86 encoding.
var gpNum = map[string]int{"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15}

func bytesOf(b ...int) string {
	s := make([]string, len(b))
	for i, x := range b {
		s[i] = fmt.Sprintf("BYTE $0x%02x", x)
	}
	return strings.Join(s, "; ")
}

// tileMem encodes TILELOADD tmm, (base)(index*1) (store false) or TILESTORED (base)(index*1), tmm (store
// true): VEX.128.F2 (F3 to store).0F38.W0 4B, a SIB operand without displacement.
func tileMem(store bool, tmm int, base, index string) string {
	bn, in := gpNum[base], gpNum[index]
	if bn&7 == 5 || in == 4 {
		panic("tileMem: base BP/R13 needs a displacement; SP cannot index")
	}
	inv := func(r int) int { return ^(r >> 3) & 1 }
	pp := 0x7B
	if store {
		pp = 0x7A
	}
	return bytesOf(0xC4, 1<<7|inv(in)<<6|inv(bn)<<5|0x02, pp, 0x4B, tmm<<3|0b100, (in&7)<<3|bn&7)
}

// tdpbf16ps encodes TDPBF16PS tmm(dst), tmm(a), tmm(b) (Intel order: dst += a · b, b in pairs of rows):
// VEX.128.F3.0F38.W0 5C, b in vvvv.
func tdpbf16ps(dst, a, b int) string {
	return bytesOf(0xC4, 0xE2, (^b&0xF)<<3|0b10, 0x5C, 0xC0|dst<<3|a)
}

// amxPrefetch is how many steps ahead the kernel prefetches its panel.
var amxPrefetch = 4

// tileLoadT1 encodes TILELOADDT1 tmm, (base)(index*1), a tile load with the hint that the data will not be
// read again soon: VEX.128.66.0F38.W0 4B (tileloaddt1 (%rax,%r10,1),%tmm4 is c4 a2 79 4b 24 10).
func tileLoadT1(tmm int, base, index string) string {
	bn, in := gpNum[base], gpNum[index]
	if bn&7 == 5 || in == 4 {
		panic("tileLoadT1: base BP/R13 needs a displacement; SP cannot index")
	}
	inv := func(r int) int { return ^(r >> 3) & 1 }
	return bytesOf(0xC4, 1<<7|inv(in)<<6|inv(bn)<<5|0x02, 0x79, 0x4B, tmm<<3|0b100, (in&7)<<3|bn&7)
}

func tileZero(t int) string { return bytesOf(0xC4, 0xE2, 0x7B, 0x49, 0xC0|t<<3) }

// The call's arguments, one struct (pairCall in pairs_amd64.go) read through its pointer; the offsets must
// match its fields.
const (
	offCfg, offA, offLda, offB, offSteps, offBlocks = 0, 8, 16, 24, 32, 40
	offC, offLdc, offLastRows, offMask, offAlpha    = 48, 56, 64, 72, 80
	offBeta, offScratch, offStream                  = 84, 88, 96
)

// loadCall writes what both panel kernels (amxPanel, dotPanel) read first from their pairCall (in DI):
// the column mask into K1 (columns 0–15) and K2 (16–31), alpha and beta broadcast into Z30 and Z31, R14
// nonzero when beta is (C must be read), A in SI and its row stride (bytes) in R10.
func loadCall(w func(format string, args ...any)) {
	w("MOVQ %d(DI), AX", offMask)
	w("KMOVW AX, K1")
	w("SHRQ $16, AX")
	w("KMOVW AX, K2")
	w("VBROADCASTSS %d(DI), Z30", offAlpha)
	w("VBROADCASTSS %d(DI), Z31", offBeta)
	w("MOVL %d(DI), R14", offBeta)
	w("ANDL $0x7fffffff, R14")
	w("MOVQ %d(DI), SI", offA)
	w("MOVQ %d(DI), R10", offLda)
}

// writeAMX writes amxPanel: for each block of 32 rows of A, C's 32 × 32 block (float32, ldc bytes; the columns the mask keeps, the last block's lastRows rows) = alpha · A's block ·
// the panel + beta · C's block (beta 0: C is not read). The panel holds steps groups of 16 rows of 32 pairs:
// row r of a group is, for each of the 32 columns, the two bfloat16 weights of contraction values 2r and
// 2r+1 (AMX's pair layout), 128 bytes, so columns 0–15 and 16–31 are two tiles 64 bytes apart. Tiles:
// C's four 16 × 16 quarters in tmm0–3, A's two 16-row halves in tmm4–5, the panel's two halves in tmm6–7;
// every step loads four tiles and issues four TDPBF16PS (65,536 multiply-adds). The block is stored to a 4
// KiB scratch and merged into C with masked AVX-512 stores, so edges cost nothing extra.
//
// A comes tiled (sgemmPairs' pairTiledA): a block's 32 rows of one step's 32 bfloat16 values are 2 KiB in
// a row (row stride lda = 64 bytes), its steps one after another, the blocks one after another. Read with
// the rows' own stride, each tile load touched 16 lines a row apart: the training products ran 2–12%
// slower (2 cores of the Emerald Rapids Xeon, interleaved runs alternating which kernel went first).
//
// A's tiles are loaded with TILELOADDT1, the hint that they will not be read again soon. A block of A
// passes over a panel once, while the panel (2 KiB a step, 36 KiB at a 576-wide contraction) is read again
// by every block of the call: with plain loads A's lines pushed the panel out of L1, and each step read
// both operands from L2, which bounds these kernels (tile loads alone ran no faster than the products).
// Measured on the 135M training products (Emerald Rapids, 2 cores, 3 × 60 interleaved rounds alternating
// which kernel went first): +3–8% mean; the LM head's products +2–4%; decoding (one block, A reused by
// every panel) unchanged.
func writeAMX() error {
	if *amxOut == "" {
		return nil
	}
	var s strings.Builder
	header := "// Code generated by command: go run . (engine/linalg/_asmgen). DO NOT EDIT.\n\n//go:build amd64\n\n"
	s.WriteString(header + "#include \"textflag.h\"\n\n")
	s.WriteString("// func amxPanel(p *pairCall)\n// Requires: AMX-TILE, AMX-BF16, AVX512F\nTEXT ·amxPanel(SB), NOSPLIT, $0-8\n")
	w := func(format string, args ...any) { fmt.Fprintf(&s, "\t"+format+"\n", args...) }
	w("MOVQ p+0(FP), DI")
	w("MOVQ %d(DI), AX", offCfg)
	w("%s // LDTILECFG (AX)", bytesOf(0xC4, 0xE2, 0x78, 0x49, 0x00))
	loadCall(w)
	w("MOVQ %d(DI), R8", offBlocks)
	w("MOVQ %d(DI), DX", offC)
	w("MOVQ %d(DI), R13", offLdc)
	w("MOVQ %d(DI), R15", offScratch)
	w("MOVQ $128, R11")
	s.WriteString("\namx_block:\n")
	for t := range 4 {
		w("%s // TILEZERO TMM%d", tileZero(t), t)
	}
	w("MOVQ SI, AX")
	w("MOVQ R10, R9")
	w("SHLQ $4, R9")
	w("ADDQ SI, R9")
	w("MOVQ %d(DI), BX", offB)
	w("MOVQ %d(DI), CX", offSteps)
	s.WriteString("\namx_step:\n")
	// A decoding batch is one block of rows: the panel streams from memory once, and the tile loads alone
	// leave the next steps' lines to the hardware prefetcher, which fetched half the bandwidth. Ask for the
	// step amxPrefetch ahead, all 32 of its lines (past the panel's end they fetch lines nobody needs).
	for off := 0; off < 2048; off += 64 {
		w("PREFETCHT0 %d(BX)", amxPrefetch*2048+off)
	}
	w("LEAQ 64(BX), R12")
	w("%s // TILELOADDT1 (AX)(R10*1), TMM4", tileLoadT1(4, "AX", "R10"))
	w("%s // TILELOADD (BX)(R11*1), TMM6", tileMem(false, 6, "BX", "R11"))
	w("%s // TDPBF16PS TMM0 += TMM4·TMM6", tdpbf16ps(0, 4, 6))
	w("%s // TILELOADD (R12)(R11*1), TMM7", tileMem(false, 7, "R12", "R11"))
	w("%s // TDPBF16PS TMM1 += TMM4·TMM7", tdpbf16ps(1, 4, 7))
	w("%s // TILELOADDT1 (R9)(R10*1), TMM5", tileLoadT1(5, "R9", "R10"))
	w("%s // TDPBF16PS TMM2 += TMM5·TMM6", tdpbf16ps(2, 5, 6))
	w("%s // TDPBF16PS TMM3 += TMM5·TMM7", tdpbf16ps(3, 5, 7))
	w("ADDQ $2048, AX")
	w("ADDQ $2048, R9")
	w("ADDQ $2048, BX")
	w("DECQ CX")
	w("JNZ amx_step")
	// The block's quarters into the scratch, 32 rows of 128 bytes.
	w("%s // TILESTORED TMM0, (R15)(R11*1)", tileMem(true, 0, "R15", "R11"))
	for t, off := range []int{1: 64, 2: 2048, 3: 2112} {
		if t == 0 {
			continue
		}
		w("LEAQ %d(R15), AX", off)
		w("%s // TILESTORED TMM%d, (AX)(R11*1)", tileMem(true, t, "AX", "R11"), t)
	}
	w("MOVQ $32, CX")
	w("CMPQ R8, $1")
	w("JNE amx_rows")
	w("MOVQ %d(DI), CX", offLastRows)
	s.WriteString("\namx_rows:\n")
	w("MOVQ R15, AX")
	w("MOVQ DX, R12")
	w("CMPQ %d(DI), $0", offStream)
	w("JNE amx_stream")
	s.WriteString("\namx_row:\n")
	w("VMULPS (AX), Z30, Z0")
	w("VMULPS 64(AX), Z30, Z1")
	w("TESTL R14, R14")
	w("JZ amx_store")
	w("VMOVUPS.Z (R12), K1, Z2")
	w("VFMADD231PS Z31, Z2, Z0")
	w("VMOVUPS.Z 64(R12), K2, Z3")
	w("VFMADD231PS Z31, Z3, Z1")
	s.WriteString("\namx_store:\n")
	w("VMOVUPS Z0, K1, (R12)")
	w("VMOVUPS Z1, K2, 64(R12)")
	w("ADDQ $128, AX")
	w("ADDQ R13, R12")
	w("DECQ CX")
	w("JNZ amx_row")
	w("JMP amx_next")
	// Streaming: whole 32-column rows, beta 0, 64-byte aligned (the caller says so): non-temporal stores
	// write C without reading its lines first, which a C larger than the caches (an LM head's logits) would
	// otherwise cost in bandwidth as much as the writes.
	s.WriteString("\namx_stream:\n")
	w("VMULPS (AX), Z30, Z0")
	w("VMULPS 64(AX), Z30, Z1")
	w("VMOVNTPS Z0, (R12)")
	w("VMOVNTPS Z1, 64(R12)")
	w("ADDQ $128, AX")
	w("ADDQ R13, R12")
	w("DECQ CX")
	w("JNZ amx_stream")
	// The next block of 32 rows of A and C.
	s.WriteString("\namx_next:\n")
	w("MOVQ %d(DI), AX", offSteps)
	w("SHLQ $11, AX")
	w("ADDQ AX, SI")
	w("MOVQ R13, AX")
	w("SHLQ $5, AX")
	w("ADDQ AX, DX")
	w("DECQ R8")
	w("JNZ amx_block")
	w("%s // TILERELEASE", bytesOf(0xC4, 0xE2, 0x78, 0x49, 0xC0))
	w("SFENCE") // the non-temporal stores are ordered before whatever the caller does next
	w("VZEROUPPER")
	w("RET")
	// The peak loop: eight TDPBF16PS per iteration on tiles that stay in registers, four independent
	// accumulators. The A and B tiles are loaded from tiles (4 KiB of bfloat16 values that are not zero):
	// on tiles of zeros the instruction ran 20% faster on the Emerald Rapids Xeon than on any data a
	// product multiplies, which made the peak a rate no kernel could reach.
	s.WriteString("\n// func amxPeak(iters int, cfg *[64]byte, tiles *uint16)\n// Requires: AMX-TILE, AMX-BF16\nTEXT ·amxPeak(SB), NOSPLIT, $0-24\n")
	w("MOVQ iters+0(FP), CX")
	w("MOVQ cfg+8(FP), AX")
	w("MOVQ tiles+16(FP), BX")
	w("MOVQ $64, R11")
	w("%s // LDTILECFG (AX)", bytesOf(0xC4, 0xE2, 0x78, 0x49, 0x00))
	for t := range 4 {
		w("%s // TILEZERO TMM%d", tileZero(t), t)
	}
	for t := 4; t < 8; t++ {
		w("%s // TILELOADD (BX)(R11*1), TMM%d", tileMem(false, t, "BX", "R11"), t)
		w("ADDQ $1024, BX")
	}
	s.WriteString("\namx_peak:\n")
	for range 2 {
		for q, ab := range [][2]int{{4, 6}, {4, 7}, {5, 6}, {5, 7}} {
			w("%s // TDPBF16PS TMM%d += TMM%d·TMM%d", tdpbf16ps(q, ab[0], ab[1]), q, ab[0], ab[1])
		}
	}
	w("DECQ CX")
	w("JNZ amx_peak")
	w("%s // TILERELEASE", bytesOf(0xC4, 0xE2, 0x78, 0x49, 0xC0))
	w("RET")
	stubs := header + "package linalg\n\n// amxPanel multiplies blocks of 32 rows of bfloat16 activations by a panel of 32 columns of bfloat16\n" +
		"// weights in AMX's pair layout into C (see pairCall).\n//\n//go:noescape\nfunc amxPanel(p *pairCall)\n" +
		"\n// amxPeak runs iters iterations of 8 TDPBF16PS on tiles held in registers (configured by cfg), the A\n// and B tiles loaded from tiles (4 KiB).\n//\n//go:noescape\nfunc amxPeak(iters int, cfg *[64]byte, tiles *uint16)\n"
	if err := os.WriteFile(*amxOut, []byte(s.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(*amxStubs, []byte(stubs), 0o644)
}

// packPairs writes packPairs32AVX512, the panel of the product A·B (B k × n row-major bfloat16, the
// contraction along its rows: the input gradient dy·W) in AMX's pair layout: for each two rows of B, 32
// columns of both interleaved (VPERMT2W), 128 bytes; columns the mask leaves out are zero, and an odd last
// row is paired with zeros.
func packPairs() {
	TEXT("packPairs32AVX512", NOSPLIT, "func(dst, src *uint16, rows, ldb int, mask uint32, idx *uint16)")
	Doc("packPairs32AVX512 interleaves rows 2r and 2r+1 of src (bfloat16, stride ldb) over the 32 columns mask",
		"keeps (zero elsewhere) into dst's 128-byte row r, for rows rows (an odd last row is paired with zeros);",
		"idx holds the two VPERMT2W index vectors.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	rows := Load(Param("rows"), GP64())
	ldb := Load(Param("ldb"), GP64())
	m := Load(Param("mask"), GP32())
	idx := Load(Param("idx"), GP64())
	SHLQ(Imm(1), ldb)
	KMOVD(m, reg.K1)
	lo, hi := ZMM(), ZMM()
	VMOVDQU16(Mem{Base: idx}, lo)
	VMOVDQU16(Mem{Base: idx, Disp: 64}, hi)
	next := GP64()
	Label("pairs_loop")
	CMPQ(rows, Imm(2))
	JL(LabelRef("pairs_tail"))
	r0, r1, out := ZMM(), ZMM(), ZMM()
	LEAQ(Mem{Base: src, Index: ldb, Scale: 1}, next)
	VMOVDQU16_Z(Mem{Base: src}, reg.K1, r0)
	VMOVDQU16_Z(Mem{Base: next}, reg.K1, r1)
	VMOVDQU64(r0, out)
	VPERMT2W(r1, lo, out)
	VPERMT2W(r1, hi, r0)
	VMOVDQU64(out, Mem{Base: dst})
	VMOVDQU64(r0, Mem{Base: dst, Disp: 64})
	LEAQ(Mem{Base: next, Index: ldb, Scale: 1}, src)
	ADDQ(Imm(128), dst)
	SUBQ(Imm(2), rows)
	JMP(LabelRef("pairs_loop"))
	Label("pairs_tail")
	TESTQ(rows, rows)
	JZ(LabelRef("pairs_done"))
	t0, z, o := ZMM(), ZMM(), ZMM()
	VMOVDQU16_Z(Mem{Base: src}, reg.K1, t0)
	VPXORD(z, z, z)
	VMOVDQU64(t0, o)
	VPERMT2W(z, lo, o)
	VPERMT2W(z, hi, t0)
	VMOVDQU64(o, Mem{Base: dst})
	VMOVDQU64(t0, Mem{Base: dst, Disp: 64})
	Label("pairs_done")
	VZEROUPPER()
	RET()
}

// pairBlocksN writes pairBlocksNAVX512, the panel of dy·W read from W's own pair layout (PackedPairs) rather
// than from a row-major W: a stored 2 KiB block holds 32 rows of W over 32 contraction values of x·Wᵀ as
// (W[r][2p], W[r][2p+1]) words, and dy·W, whose contraction runs over W's rows, wants (W[2q][c], W[2q+1][c]).
// Within each 64-bit pair of words (rows 2q, 2q+1 of two columns) VPSHUFB swaps the middle two values; the
// 16 × 16 matrix of those 64-bit pairs is then transposed as four 8 × 8 quadrants (unpack, then two rounds
// of 128-bit lane shuffles), so W is never kept row-major for the backward pass.
func pairBlocksN() {
	TEXT("pairBlocksNAVX512", NOSPLIT, "func(dst, src *uint16, blocks, stride int, shuf *byte)")
	Doc("pairBlocksNAVX512 writes blocks 2 KiB blocks of a PackedPairs (the first at src, each next stride bytes",
		"on) to dst one after another, each transposed from pairs along W's columns to pairs along its rows",
		"(see pairBlocksN in _asmgen); shuf is the 64-byte VPSHUFB mask that swaps each 64-bit pair's middle words.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	blocks := Load(Param("blocks"), GP64())
	stride := Load(Param("stride"), GP64())
	sh := Load(Param("shuf"), GP64())
	mask := ZMM()
	VMOVDQU64(Mem{Base: sh}, mask)
	Label("blocksn_loop")
	TESTQ(blocks, blocks)
	JZ(LabelRef("blocksn_done"))
	// Quadrant (h, g): rows 16h .. 16h+15 of W (64 bytes at 64h of each pair row), pair rows 8g .. 8g+7 of
	// the stored block; it becomes rows 8h .. 8h+7 of the new block at byte 64g.
	for h := 0; h < 2; h++ {
		for g := 0; g < 2; g++ {
			r := make([]reg.VecVirtual, 8)
			for p := range r {
				r[p] = ZMM()
				VMOVDQU64(Mem{Base: src, Disp: (8*g+p)*128 + 64*h}, r[p])
				VPSHUFB(mask, r[p], r[p])
			}
			t := make([]reg.VecVirtual, 8)
			for i := 0; i < 4; i++ {
				t[2*i], t[2*i+1] = ZMM(), ZMM()
				VPUNPCKLQDQ(r[2*i+1], r[2*i], t[2*i])
				VPUNPCKHQDQ(r[2*i+1], r[2*i], t[2*i+1])
			}
			// t0 = lo(r0,r1), t1 = hi(r0,r1), t2 = lo(r2,r3), ...; u pairs lanes 0 and 2 (0x88) or 1 and 3 (0xDD).
			u := make([]reg.VecVirtual, 8)
			for i, s := range [][3]int{{0, 2, 0x88}, {0, 2, 0xDD}, {1, 3, 0x88}, {1, 3, 0xDD}, {4, 6, 0x88}, {4, 6, 0xDD}, {5, 7, 0x88}, {5, 7, 0xDD}} {
				u[i] = ZMM()
				VSHUFI64X2(Imm(uint64(s[2])), t[s[1]], t[s[0]], u[i])
			}
			// Column j of the quadrant (its rows' j-th 64-bit pairs): out0 from u0,u4 (0x88), out4 (0xDD), out2
			// from u1,u5, out6, out1 from u2,u6, out5, out3 from u3,u7, out7.
			for _, s := range [][4]int{{0, 0, 4, 0x88}, {4, 0, 4, 0xDD}, {2, 1, 5, 0x88}, {6, 1, 5, 0xDD}, {1, 2, 6, 0x88}, {5, 2, 6, 0xDD}, {3, 3, 7, 0x88}, {7, 3, 7, 0xDD}} {
				o := ZMM()
				VSHUFI64X2(Imm(uint64(s[3])), u[s[2]], u[s[1]], o)
				VMOVDQU64(o, Mem{Base: dst, Disp: (8*h+s[0])*128 + 64*g})
			}
		}
	}
	ADDQ(stride, src)
	ADDQ(U32(2048), dst)
	DECQ(blocks)
	JMP(LabelRef("blocksn_loop"))
	Label("blocksn_done")
	VZEROUPPER()
	RET()
}
