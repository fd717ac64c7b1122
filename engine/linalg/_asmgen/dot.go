package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// The bfloat16 dot-product tiles (avx512_bf16): VDPBF16PS multiplies pairs of bfloat16 values and adds both
// products to a float32 lane, twice the multiply-adds of an FMA per instruction, and reads the weights as
// stored. Neither Go's assembler nor avo knows the instruction, so these kernels are written here as text
// with fixed registers and the instruction as bytes (vdpbf16ps below).

var dotOut = flag.String("dotout", "", "write the bfloat16 dot-product tiles (assembly) to this file")
var dotStubs = flag.String("dotstubs", "", "write their Go declarations to this file")

// writeDotTiles writes dotTile<mr>x4BF16DOT for mr = 1..4: c[i*ldc+j] = alpha·Σ_{p<k} float32(a[i*lda+p]) ·
// float32(b[j*ldb+p]) + beta·c[i*ldc+j] for i < mr, j < 4, with A and B both bfloat16 and k a multiple of 32
// (beta 0: c is not read). Accumulators Z0–Z15 (tile row i, column j in Z(4i+j)), rows of A in Z16–Z19, a
// row of B in Z20, Z21–Z24 for the sums, alpha and beta. The four sums of a row of the tile are contiguous in
// C, so each row is folded to one xmm register (a tree of VHADDPS) and written with one store: the tile
// costs few instructions past its products, which matters at k = 576, where a tile is only 18 steps.
func writeDotTiles() error {
	return writeText(*dotOut, *dotStubs, dotTiles)
}

func dotTiles(s, g *strings.Builder) {
	const sig = "(k int, a *uint16, lda int, b *uint16, ldb int, c *float32, ldc int, alpha, beta float32)"
	for mr := 1; mr <= 4; mr++ {
		name := fmt.Sprintf("dotTile%dx4BF16DOT", mr)
		fmt.Fprintf(g, "\n// %s sets c[i*ldc+j] = alpha·(row i of A · row j of B) + beta·c[i*ldc+j] for i < %d and\n"+
			"// j < 4, A and B bfloat16 (strides lda and ldb), over k values, a multiple of 32 (beta 0: c is not\n"+
			"// read): VDPBF16PS, avx512_bf16.\n//\n//go:noescape\nfunc %s%s\n", name, mr, name, sig)
		fmt.Fprintf(s, "\n// func %s%s\n", name, sig)
		fmt.Fprintf(s, "// Requires: AVX512F, AVX512VL, AVX512_BF16\nTEXT ·%s(SB), NOSPLIT, $0-64\n", name)
		s.WriteString("\tMOVQ k+0(FP), AX\n\tMOVQ a+8(FP), CX\n\tMOVQ lda+16(FP), DX\n\tMOVQ b+24(FP), BX\n" +
			"\tMOVQ ldb+32(FP), SI\n\tMOVQ c+40(FP), DI\n\tSHLQ $0x01, DX\n\tSHLQ $0x01, SI\n")
		// Rows of A: CX, R8, R9, R10; rows of B: BX, R11, R12, R13; the next tile of B: R14; index R15.
		arow := []string{"CX", "R8", "R9", "R10"}
		brow := []string{"BX", "R11", "R12", "R13"}
		for i := 1; i < mr; i++ {
			fmt.Fprintf(s, "\tLEAQ (%s)(DX*1), %s\n", arow[i-1], arow[i])
		}
		for j := 1; j < 4; j++ {
			fmt.Fprintf(s, "\tLEAQ (%s)(SI*1), %s\n", brow[j-1], brow[j])
		}
		s.WriteString("\tLEAQ (R13)(SI*1), R14\n")
		for i := 0; i < mr; i++ {
			for j := 0; j < 4; j++ {
				fmt.Fprintf(s, "\tVPXORD Z%d, Z%d, Z%d\n", 4*i+j, 4*i+j, 4*i+j)
			}
		}
		s.WriteString("\tXORQ R15, R15\n\n" + name + "_loop:\n\tCMPQ R15, AX\n\tJGE " + name + "_sum\n")
		// A step takes 32 values: 64 bytes of each row; the next tile's 4 rows advance 256 bytes.
		for off := 0; off < 256; off += 64 {
			fmt.Fprintf(s, "\tPREFETCHT0 %d(R14)(R15*8)\n", off)
		}
		for i := 0; i < mr; i++ {
			fmt.Fprintf(s, "\tVMOVDQU32 (%s)(R15*2), Z%d\n", arow[i], 16+i)
		}
		for j := 0; j < 4; j++ {
			fmt.Fprintf(s, "\tVMOVDQU32 (%s)(R15*2), Z20\n", brow[j])
			for i := 0; i < mr; i++ {
				fmt.Fprintf(s, "\t%s // VDPBF16PS Z20, Z%d, Z%d\n", vdpbf16ps(4*i+j, 16+i, 20), 16+i, 4*i+j)
			}
		}
		s.WriteString("\tADDQ $0x20, R15\n\tJMP " + name + "_loop\n\n" + name + "_sum:\n")
		// C's rows: DI and, reusing A's row registers, CX, R8, R9 (ldc in bytes in DX).
		s.WriteString("\tMOVQ ldc+48(FP), DX\n\tSHLQ $0x02, DX\n\tVBROADCASTSS alpha+56(FP), X23\n" +
			"\tVBROADCASTSS beta+60(FP), X24\n\tMOVL beta+60(FP), R14\n\tANDL $0x7fffffff, R14\n")
		crow := []string{"DI", "CX", "R8", "R9"}
		for i := 1; i < mr; i++ {
			fmt.Fprintf(s, "\tLEAQ (%s)(DX*1), %s\n", crow[i-1], crow[i])
		}
		for i := 0; i < mr; i++ {
			for j := 0; j < 4; j++ {
				z := 4*i + j
				fmt.Fprintf(s, "\tVEXTRACTF64X4 $0x01, Z%d, Y21\n\tVADDPS Y21, Y%d, Y%d\n", z, z, z)
				fmt.Fprintf(s, "\tVEXTRACTF32X4 $0x01, Y%d, X21\n\tVADDPS X21, X%d, X%d\n", z, z, z)
			}
			r := 4 * i
			fmt.Fprintf(s, "\tVHADDPS X%d, X%d, X%d\n\tVHADDPS X%d, X%d, X%d\n\tVHADDPS X%d, X%d, X%d\n",
				r+1, r, r, r+3, r+2, r+2, r+2, r, r)
			fmt.Fprintf(s, "\tVMULPS X23, X%d, X%d\n", r, r)
		}
		s.WriteString("\tTESTL R14, R14\n\tJZ " + name + "_store\n")
		for i := 0; i < mr; i++ {
			fmt.Fprintf(s, "\tVMOVUPS (%s), X22\n\tVFMADD231PS X24, X22, X%d\n", crow[i], 4*i)
		}
		s.WriteString("\n" + name + "_store:\n")
		for i := 0; i < mr; i++ {
			fmt.Fprintf(s, "\tVMOVUPS X%d, (%s)\n", 4*i, crow[i])
		}
		s.WriteString("\tVZEROUPPER\n\tRET\n")
	}
	dotPanel(s, g)
	dotPeak(s, g)
}

// writeText writes a file of kernels written as text (the dot tiles, the skinny kernels) by body, and their
// Go declarations; nothing when out is empty.
func writeText(out, stubs string, body func(s, g *strings.Builder)) error {
	if out == "" {
		return nil
	}
	var s, g strings.Builder
	header := "// Code generated by command: go run . (engine/linalg/_asmgen). DO NOT EDIT.\n\n//go:build amd64\n\n"
	s.WriteString(header + "#include \"textflag.h\"\n")
	g.WriteString(header + "package linalg\n")
	body(&s, &g)
	if err := os.WriteFile(out, []byte(s.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(stubs, []byte(g.String()), 0o644)
}

// vdpbf16ps encodes VDPBF16PS zmm(dst), zmm(src1), zmm(src2) (Intel order: dst += pairwise products of
// src1 and src2) as BYTE directives: EVEX.512.F3.0F38.W0 52 /r, register operands, no masking.
func vdpbf16ps(dst, src1, src2 int) string {
	inv := func(x, bit int) int { return ^(x >> bit) & 1 }
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b10
	p1 := (^src1&0xF)<<3 | 1<<2 | 0b10
	p2 := 0b10<<5 | inv(src1, 4)<<3
	modrm := 0xC0 | (dst&7)<<3 | src2&7
	return fmt.Sprintf("BYTE $0x62; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x52; BYTE $0x%02x", p0, p1, p2, modrm)
}

// dotPrefetch is how many steps ahead dotPanel's first tile prefetches its panel.
var dotPrefetch = 4

// dotPanel's tiles prefetch the panel after next into L2 (the one two calls on, in a packed copy), not the
// next: a panel of 32 rows at a contraction of 576 is 36 KiB, about 5 µs of a 32-row decoding step's
// products, and one panel's lead left the first tile of each waiting on memory. The body's products of a
// decoding step of 32 rows, the session's three interleaved pairs on a Zen 4 EPYC (linalg's
// BenchmarkDecodeBody/fused): 18.4–19.6 ms against 19.9–24.1; at 8 rows 7.7–8.2 against 8.1–9.2; the LM
// head alone (BenchmarkPackedPairs) level.

// dotPanel writes dotPanel(p *pairCall), amxPanel's product (the same call, the same layouts: rows of
// bfloat16 activations, a panel of 32 columns in AMX's pair layout) on VDPBF16PS register tiles, for CPUs with
// avx512_bf16 and no AMX tiles. A tile is 8 rows × 32 columns: 16 accumulators (row i in Z(2i), Z(2i+1)).
// Each pair row of the panel is two zmm loads (its 32 columns' pairs), each row of A one 32-bit broadcast
// of its pair, and the 16 VDPBF16PS that follow use them: 10 loads per 16 products, which leaves the
// products, not the loads, to bound it. Rows go 8 at a time through all of the blocks' rows (lastRows in the
// last), and each tile writes its rows of C itself: alpha·sums + beta·C (beta 0: C not read) under the
// column mask, or non-temporal stores where the call streams.
func dotPanel(s, g *strings.Builder) {
	const name = "dotPanel"
	fmt.Fprintf(g, "\n// %s is amxPanel's product (see pairCall) on VDPBF16PS register tiles of 8 rows × 32 columns,\n"+
		"// avx512_bf16, for CPUs without AMX tiles.\n//\n//go:noescape\nfunc %s(p *pairCall)\n", name, name)
	fmt.Fprintf(s, "\n// func %s(p *pairCall)\n// Requires: AVX512F, AVX512BW, AVX512_BF16\nTEXT ·%s(SB), NOSPLIT, $0-8\n", name, name)
	w := func(format string, args ...any) { fmt.Fprintf(s, "\t"+format+"\n", args...) }
	label := func(l string) { fmt.Fprintf(s, "\n%s_%s:\n", name, l) }
	w("MOVQ p+0(FP), DI")
	loadCall(w)
	w("LEAQ (R10)(R10*2), R11") // 3·lda
	w("MOVQ %d(DI), DX", offC)
	w("MOVQ %d(DI), R13", offLdc)
	// R15: the rows left, (blocks-1)·32 + lastRows.
	w("MOVQ %d(DI), R15", offBlocks)
	w("DECQ R15")
	w("SHLQ $5, R15")
	w("ADDQ %d(DI), R15", offLastRows)
	// R8: where the next tile's share of the panel after next starts (see dotTileRows): two panels of
	// steps·2 KiB past B.
	w("MOVQ %d(DI), R8", offSteps)
	w("SHLQ $12, R8")
	w("ADDQ %d(DI), R8", offB)
	// A tile is 8 rows, or for the last rows of a call that has fewer left, 4, 2 or 1 (the rows of a
	// decoding step of one sequence, on weights held only in the pair layout): a tile's multiply-adds are as
	// many as its rows, and 1 row on 8-row tiles ran 8 times the products of the weights it streams.
	label("tile")
	w("CMPQ R15, $4")
	w("JG %s_tile8", name)
	w("JE %s_tile4", name)
	w("CMPQ R15, $2")
	w("JG %s_tile4", name)
	w("JE %s_tile2", name)
	w("JMP %s_tile1", name)
	for _, rows := range []int{8, 4, 2, 1} {
		dotTileRows(w, label, name, rows)
	}
	// The next 8 rows of A and C.
	label("next")
	// The next tile prefetches the next quarter of each of the panel after next's steps (BX is the end of
	// this panel: the next one's start, a panel of steps·2 KiB before the one R8 walks).
	w("ADDQ $512, R8")
	w("MOVQ %d(DI), R12", offSteps)
	w("SHLQ $11, R12")
	w("LEAQ 2048(BX)(R12*1), R12")
	w("CMPQ R8, R12")
	w("JL %s_quarter", name)
	w("SUBQ $2048, R8")
	label("quarter")
	w("LEAQ (SI)(R10*8), SI")
	w("LEAQ (DX)(R13*8), DX")
	w("SUBQ $8, R15")
	w("JG %s_tile", name)
	w("SFENCE")
	w("VZEROUPPER")
	w("RET")
}

// dotTileRows writes dotPanel's tile of rows rows (8, or fewer for a call's last rows): accumulators Z0 ..
// Z(2·rows−1), the panel's steps, and the epilogue that stores them, then on to dotPanel's next 8 rows.
func dotTileRows(w func(format string, args ...any), label func(string), name string, rows int) {
	label(fmt.Sprintf("tile%d", rows))
	for z := 0; z < 2*rows; z++ {
		w("VPXORD Z%d, Z%d, Z%d", z, z, z)
	}
	// With beta nonzero the epilogue reads the tile's rows of C (a residual's beta 1, an input gradient's sum
	// over projections, the blocks after the first of a long contraction): they are fetched now, while the
	// steps run, rather than waited on there. SmolLM2-135M's SFT step on a Zen 5 EPYC, 4 interleaved runs of
	// two binaries: the o projection's forward products 0.43–0.46 s against 0.50–0.52, down's 1.01–1.07
	// against 1.07–1.12, the input gradients' 4.48–4.65 against 4.63–4.75.
	w("TESTL R14, R14")
	w("JZ %s_steps%d", name, rows)
	w("MOVQ DX, R12")
	for i := 0; i < rows; i++ {
		w("PREFETCHT0 (R12)")
		w("PREFETCHT0 64(R12)")
		if i < rows-1 {
			w("ADDQ R13, R12")
		}
	}
	label(fmt.Sprintf("steps%d", rows))
	w("MOVQ SI, AX")
	w("LEAQ (SI)(R10*4), R9")
	w("MOVQ %d(DI), BX", offB)
	w("MOVQ %d(DI), CX", offSteps)
	// Row i of the tile: rows 0–3 from AX, 4–7 from R9, at lda, 2·lda and 3·lda (R11) past them.
	rowMem := func(i, disp int) string {
		base := "AX"
		if i >= 4 {
			base = "R9"
		}
		switch i % 4 {
		case 0:
			return fmt.Sprintf("%d(%s)", disp, base)
		case 1:
			return fmt.Sprintf("%d(%s)(R10*1)", disp, base)
		case 2:
			return fmt.Sprintf("%d(%s)(R10*2)", disp, base)
		}
		return fmt.Sprintf("%d(%s)(R11*1)", disp, base)
	}
	// The first tile of a call streams the panel from memory (a decoding batch's weights, read once): it
	// also prefetches the panel after next (two on in a packed copy, which the same worker takes the call
	// after next) into L2 as it goes, a step at a time, so that that call's first tile finds it there. The
	// later tiles read this panel from the caches and skip the prefetches.
	//
	// With more than one tile (a decoding batch of 32 rows is 4), those prefetches are spread over the
	// tiles: the first one's memory traffic was all of the call's, twice what a core streams while its
	// products run, and the later tiles' none. Each tile then prefetches a quarter of every step of the
	// panel after next (R8, advanced by the tiles in turn), and the first also its own panel ahead.
	w("MOVQ R8, R12")
	w("CMPQ SI, %d(DI)", offA)
	w("JNE %s_stepq%d", name, rows)
	w("CMPQ R15, $8")
	w("JG %s_stepfirst%d", name, rows)
	w("MOVQ %d(DI), R12", offSteps)
	w("SHLQ $12, R12")
	w("ADDQ BX, R12")
	const (
		whole   = iota // the only tile: its panel ahead and all of the panel after next
		first          // the first of several: its panel ahead and a quarter of the panel after next
		quarter        // a later tile: a quarter of the panel after next
	)
	for _, pf := range []int{whole, first, quarter} {
		switch pf {
		case whole:
			label(fmt.Sprintf("stepfetch%d", rows))
		case first:
			label(fmt.Sprintf("stepfirst%d", rows))
		default:
			label(fmt.Sprintf("stepq%d", rows))
		}
		// A step is 16 pair rows: 2 KiB of the panel, 64 bytes of each row of A.
		for r := 0; r < 16; r++ {
			if pf != quarter {
				w("PREFETCHT0 %d(BX)", dotPrefetch*2048+r*128)
				w("PREFETCHT0 %d(BX)", dotPrefetch*2048+r*128+64)
			}
			switch {
			case pf == whole:
				w("PREFETCHT1 %d(R12)", r*128)
				w("PREFETCHT1 %d(R12)", r*128+64)
			case r%2 == 0:
				w("PREFETCHT1 %d(R12)", r*32)
			}
			w("VMOVDQU32 %d(BX), Z16", r*128)
			w("VMOVDQU32 %d(BX), Z17", r*128+64)
			for i := 0; i < rows; i++ {
				a := 18 + i%4
				w("VPBROADCASTD %s, Z%d", rowMem(i, 4*r), a)
				w("%s // VDPBF16PS Z16, Z%d, Z%d", vdpbf16ps(2*i, 16, a), a, 2*i)
				w("%s // VDPBF16PS Z17, Z%d, Z%d", vdpbf16ps(2*i+1, 17, a), a, 2*i+1)
			}
		}
		w("ADDQ $64, AX")
		w("ADDQ $64, R9")
		w("ADDQ $2048, BX")
		w("ADDQ $2048, R12")
		w("DECQ CX")
		switch pf {
		case whole:
			w("JNZ %s_stepfetch%d", name, rows)
			w("JMP %s_epilogue%d", name, rows)
		case first:
			w("JNZ %s_stepfirst%d", name, rows)
			w("JMP %s_epilogue%d", name, rows)
		default:
			w("JNZ %s_stepq%d", name, rows)
		}
	}
	label(fmt.Sprintf("epilogue%d", rows))
	// CX: the tile's rows of C, min(rows, rows left); R12 walks them.
	w("MOVQ $%d, CX", rows)
	w("CMPQ R15, CX")
	w("CMOVQLT R15, CX")
	w("MOVQ DX, R12")
	w("CMPQ %d(DI), $0", offStream)
	w("JNE %s_stream%d", name, rows)
	for i := 0; i < rows; i++ {
		w("VMULPS Z30, Z%d, Z%d", 2*i, 2*i)
		w("VMULPS Z30, Z%d, Z%d", 2*i+1, 2*i+1)
		w("TESTL R14, R14")
		w("JZ %s_store%d_%d", name, rows, i)
		w("VMOVUPS.Z (R12), K1, Z26")
		w("VFMADD231PS Z31, Z26, Z%d", 2*i)
		w("VMOVUPS.Z 64(R12), K2, Z27")
		w("VFMADD231PS Z31, Z27, Z%d", 2*i+1)
		label(fmt.Sprintf("store%d_%d", rows, i))
		w("VMOVUPS Z%d, K1, (R12)", 2*i)
		w("VMOVUPS Z%d, K2, 64(R12)", 2*i+1)
		w("ADDQ R13, R12")
		w("DECQ CX")
		w("JZ %s_next", name)
	}
	w("JMP %s_next", name)
	// Streaming (beta 0, whole 64-byte aligned rows of 32 columns, the caller says so): see amxPanel.
	label(fmt.Sprintf("stream%d", rows))
	for i := 0; i < rows; i++ {
		w("VMULPS Z30, Z%d, Z%d", 2*i, 2*i)
		w("VMULPS Z30, Z%d, Z%d", 2*i+1, 2*i+1)
		w("VMOVNTPS Z%d, (R12)", 2*i)
		w("VMOVNTPS Z%d, 64(R12)", 2*i+1)
		w("ADDQ R13, R12")
		w("DECQ CX")
		w("JZ %s_next", name)
	}
	w("JMP %s_next", name)
}
