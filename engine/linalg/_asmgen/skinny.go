package main

import (
	"flag"
	"fmt"
	"strings"
)

// The skinny products: a LoRA adapter's products with its rank r (8 or 16) on one side and a micro-batch's
// N tokens (hundreds to thousands) on the other. The blocked kernel pads r to its 32-column tiles and packs
// the N-long operand on every call, and ran these at 25–60 GFLOP/s, a quarter of an RL step's fp32 time for a
// tenth of its multiply-adds. These kernels read both operands as stored, with embedded broadcasts
// (VFMADD231PS.BCST) and the r columns under a mask. Written as text, as the dot tiles are: the embedded
// broadcast and masked forms are plain Go assembler syntax.

var skinnyOut = flag.String("skinnyout", "", "write the skinny-product kernels (assembly) to this file")
var skinnyStubs = flag.String("skinnystubs", "", "write their Go declarations to this file")

func writeSkinny() error {
	return writeText(*skinnyOut, *skinnyStubs, func(s, g *strings.Builder) {
		skinnyRows(s, g, "Y", 8)
		skinnyRows(s, g, "Z", 16)
		skinnyRowsAVX2(s, g)
		skinnySweeps(s, g)
	})
}

// skinnyRows writes skinnyRows8x<width>: c[i*ldc+j] = alpha·Σ_{p<k} x[i*ldx+p]·m[p*ldm+j] for 8 rows i and
// the columns j < width that mask selects (C = alpha·X·M: an adapter's x·Aᵀ with Aᵀ as M, or dy·B). Row i
// accumulates in register i; a step loads a row of M (masked: its columns past the mask are never read) and
// multiplies it by each row's x[p], broadcast from memory by the FMA itself: 9 loads per 8 FMAs. With ymm
// registers (r ≤ 8) the FMAs carry no padding; Zen 4 and Intel's two-FMA cores issue two a cycle.
func skinnyRows(s, g *strings.Builder, reg string, width int) {
	name := fmt.Sprintf("skinnyRows8x%dAVX512", width)
	const sig = "(k int, x *float32, ldx int, m *float32, ldm int, c *float32, ldc int, mask int, alpha float32)"
	fmt.Fprintf(g, "\n// %s sets c[i*ldc+j] = alpha·Σ_{p<k} x[i*ldx+p]·m[p*ldm+j] for i < 8 and the columns j < %d\n"+
		"// that mask selects (its low bits), reading no column of M past them.\n//\n//go:noescape\nfunc %s%s\n",
		name, width, name, sig)
	w, label := skinnyText(s, name, sig, "AVX512F, AVX512VL", [5]string{"k", "x", "ldx", "m", "ldm"})
	w("MOVQ mask+56(FP), R9")
	w("KMOVW R9, K1")
	skinnyRowsBody(w, label, name, skinnyRowsOps{
		m:     [2]string{reg + "16", reg + "17"},
		alpha: reg + "16",
		zero:  func(i int) { w("VPXORD %s%d, %s%d, %s%d", reg, i, reg, i, reg, i) },
		load:  func(mem, dst string) { w("VMOVUPS.Z %s, K1, %s", mem, dst) },
		fma: func(off, row, src string, i int) {
			w("VFMADD231PS.BCST %s(%s)(DX*4), %s, %s%d", off, row, src, reg, i)
		},
		store: func(i int) {
			w("VMULPS %s16, %s%d, %s%d", reg, reg, i, reg, i)
			w("VMOVUPS %s%d, K1, (DI)", reg, i)
		},
	})
}

// skinnyRowsAVX2 writes skinnyRows8x8AVX2, skinnyRows8x<width>'s form for AVX2 machines: 8 rows of C, 8
// columns at most, in 8 ymm accumulators. Without masks or embedded broadcasts, a row of M is loaded under a
// lane mask (VMASKMOVPS, which reads no masked lane), each row's x[p] is broadcast into one of five rotating
// registers, and C is stored under the mask; two steps a turn. On AVX2 the blocked kernel ran these products
// at 26–41 GFLOP/s (a sixth of the FMA peak): half of each 16-wide tile was padding, and the N-long operand
// was packed on every call.
func skinnyRowsAVX2(s, g *strings.Builder) {
	const name = "skinnyRows8x8AVX2"
	const sig = "(k int, x *float32, ldx int, m *float32, ldm int, c *float32, ldc int, mask *int32, alpha float32)"
	fmt.Fprintf(g, "\n// %s sets c[i*ldc+j] = alpha·Σ_{p<k} x[i*ldx+p]·m[p*ldm+j] for i < 8 and the columns j < 8\n"+
		"// whose lane of mask (8 values) is −1, reading no column of M past them.\n//\n//go:noescape\nfunc %s%s\n",
		name, name, sig)
	w, label := skinnyText(s, name, sig, "AVX, AVX2, FMA3", [5]string{"k", "x", "ldx", "m", "ldm"})
	w("MOVQ mask+56(FP), R9")
	w("VMOVDQU (R9), Y15")
	t := 0
	skinnyRowsBody(w, label, name, skinnyRowsOps{
		m:     [2]string{"Y8", "Y9"},
		alpha: "Y8",
		zero:  func(i int) { w("VXORPS Y%d, Y%d, Y%d", i, i, i) },
		load:  func(mem, dst string) { w("VMASKMOVPS %s, Y15, %s", mem, dst) },
		fma: func(off, row, src string, i int) { // x[row][p+off] into the next of five registers, then the FMA
			w("VBROADCASTSS %s(%s)(DX*4), Y%d", off, row, 10+t)
			w("VFMADD231PS %s, Y%d, Y%d", src, 10+t, i)
			t = (t + 1) % 5
		},
		store: func(i int) {
			w("VMULPS Y8, Y%d, Y%d", i, i)
			w("VMASKMOVPS Y%d, Y15, (DI)", i)
		},
	})
}

// skinnySweeps writes the outer products' kernels, swept over a block of rows: for each of strips strips of
// an 8-row block of C (8 columns on AVX2, skinnyOuterSweep8x8AVX2; 16 on AVX-512, skinnyOuterSweep8x16AVX512),
// its 8 accumulators (zero in the first block of rows, else loaded from acc) take the block's rows — a masked
// load of X and 8 FMAs on u's eight values — and are then stored back to acc, or in the last block added to C
// under the mask (alpha·acc + C in one FMA). A block's rows of X are read strip after strip, so they stay in
// L1/L2 while the sweep crosses them, and each load asks for the same place pf bytes on (the next block) to be
// fetched. One strip over all rows at once, stepped down X at its row stride, a new cache line every 4 cycles
// of work: the prefetcher's short reach left AVX2's kernel at 8 GB/s on a Zen 3 EPYC, a third of what the rows
// kernel reads, and AVX-512's, which also took each product of an AddOuters on its own, at 41–61 GFLOP/s for 3
// adapters' duᵀ·x at 4,096 tokens with X cold on 2 cores of a Xeon (91–113 swept). AVX2 loads and stores under a
// lane mask (VMASKMOVPS) and broadcasts u's values into four rotating registers; AVX-512 uses a k-mask made
// from the same 16 lanes of mask and lets the FMAs broadcast u's values from memory.
func skinnySweeps(s, g *strings.Builder) {
	for _, is := range []struct {
		name, reg, requires string
		width               int // columns of a strip: lanes of a register
		avx512              bool
	}{{"skinnyOuterSweep8x8AVX2", "Y", "AVX, AVX2, FMA3", 8, false}, {"skinnyOuterSweep8x16AVX512", "Z", "AVX512DQ, AVX512F", 16, true}} {
		name, r, n := is.name, is.reg, is.width
		const sig = "(rows int, u *float32, ldu int, x *float32, ldx int, acc *float32, strips int, mask *int32, pf int, c *float32, ldc int, flags int, alpha float32)"
		fmt.Fprintf(g, "\n// %s adds Σ_{t<rows} u[t*ldu+j]·x[t*ldx+%ds+l] to the accumulator acc[%ds+%dj+l] for j < 8,\n"+
			"// l < %d and s < strips, reading only the lanes l that mask (%d values) selects; flags bit 0: the\n"+
			"// accumulators start at zero instead of acc; bit 1: they are not stored but added to C,\n"+
			"// c[j*ldc+%ds+l] += alpha·acc. Each row's load also prefetches pf bytes further on.\n//\n//go:noescape\nfunc %s%s\n",
			name, n, 8*n, n, n, n, n, name, sig)
		w, label := skinnyText(s, name, sig, is.requires, [5]string{"rows", "u", "ldu", "x", "ldx"})
		vec := 4 * n // bytes of a register
		w("MOVQ acc+40(FP), R11")
		w("MOVQ strips+48(FP), CX")
		w("MOVQ mask+56(FP), R9")
		// maskedLoad and maskedStore move the lanes mask selects (the others read as zero, not written).
		var maskedLoad, maskedStore func(mem, reg string)
		if is.avx512 {
			w("VMOVDQU32 (R9), Z15")
			w("VPMOVD2M Z15, K1")
			maskedLoad = func(mem, reg string) { w("VMOVUPS.Z %s, K1, %s", mem, reg) }
			maskedStore = func(mem, reg string) { w("VMOVUPS %s, K1, %s", reg, mem) }
		} else {
			w("VMOVDQU (R9), Y15")
			maskedLoad = func(mem, reg string) { w("VMASKMOVPS %s, Y15, %s", mem, reg) }
			maskedStore = func(mem, reg string) { w("VMASKMOVPS %s, Y15, %s", reg, mem) }
		}
		w("MOVQ pf+64(FP), R10")
		w("MOVQ c+72(FP), R13")
		w("MOVQ ldc+80(FP), R9")
		w("SHLQ $0x02, R9")
		w("VBROADCASTSS alpha+96(FP), %s14", r)
		label("strip")
		w("TESTQ CX, CX")
		w("JZ %s_done", name)
		w("BTQ $0x00, flags+88(FP)")
		w("JNC %s_load", name)
		zero := "VXORPS" // VPXORD is AVX-512's
		if is.avx512 {
			zero = "VPXORD"
		}
		for i := 0; i < 8; i++ {
			w("%s %s%d, %s%d, %s%d", zero, r, i, r, i, r, i)
		}
		w("JMP %s_rows", name)
		label("load")
		for i := 0; i < 8; i++ {
			w("VMOVUPS %d(R11), %s%d", vec*i, r, i)
		}
		label("rows")
		w("MOVQ SI, DI")
		w("MOVQ BX, R12")
		w("MOVQ AX, R14")
		label("row")
		w("PREFETCHT0 (R12)(R10*1)")
		maskedLoad("(R12)", r+"8")
		for j := 0; j < 8; j++ {
			if is.avx512 {
				w("VFMADD231PS.BCST %d(DI), Z8, Z%d", 4*j, j)
				continue
			}
			t := 10 + j%4
			w("VBROADCASTSS %d(DI), Y%d", 4*j, t)
			w("VFMADD231PS Y8, Y%d, Y%d", t, j)
		}
		w("ADDQ DX, DI")
		w("ADDQ R8, R12")
		w("DECQ R14")
		w("JNZ %s_row", name)
		w("BTQ $0x01, flags+88(FP)")
		w("JC %s_merge", name)
		for i := 0; i < 8; i++ {
			w("VMOVUPS %s%d, %d(R11)", r, i, vec*i)
		}
		w("JMP %s_next", name)
		label("merge")
		w("MOVQ R13, DI")
		for j := 0; j < 8; j++ {
			maskedLoad("(DI)", r+"9")
			w("VFMADD231PS %s14, %s%d, %s9", r, r, j, r)
			maskedStore("(DI)", r+"9")
			if j < 7 {
				w("ADDQ R9, DI")
			}
		}
		w("ADDQ $0x%02x, R13", vec)
		label("next")
		w("ADDQ $0x%02x, R11", 8*vec)
		w("ADDQ $0x%02x, BX", vec)
		w("DECQ CX")
		w("JMP %s_strip", name)
		label("done")
		w("VZEROUPPER")
		w("RET")
	}
}

// skinnyText starts a skinny kernel in s (its TEXT line, then the loads of its first five arguments: AX, SI,
// DX in bytes, BX, R8 in bytes) and returns its line and label writers.
func skinnyText(s *strings.Builder, name, sig, requires string, args [5]string) (w func(string, ...any), label func(string)) {
	// The arguments are 8 bytes each but the last, alpha (4).
	frame := 8*strings.Count(sig, ",") + 4
	fmt.Fprintf(s, "\n// func %s%s\n// Requires: %s\nTEXT ·%s(SB), NOSPLIT, $0-%d\n", name, sig, requires, name, frame)
	w = func(format string, a ...any) { fmt.Fprintf(s, "\t"+format+"\n", a...) }
	label = func(l string) { fmt.Fprintf(s, "\n%s_%s:\n", name, l) }
	for i, r := range []string{"AX", "SI", "DX", "BX", "R8"} {
		w("MOVQ %s+%d(FP), %s", args[i], 8*i, r)
		if i == 2 || i == 4 {
			w("SHLQ $0x02, %s", r)
		}
	}
	return w, label
}

// skinnyRowsOps are an instruction set's pieces of a skinny rows kernel: the registers M's two rows are loaded
// into and alpha is broadcast into, and the instructions that zero accumulator i, load a row of M, add x[row]
// at step p+off times M's row in src to accumulator i, and scale accumulator i and store it at (DI).
type skinnyRowsOps struct {
	m     [2]string
	alpha string
	zero  func(i int)
	load  func(mem, dst string)
	fma   func(off, row, src string, i int)
	store func(i int)
}

// skinnyRowsBody writes a skinny rows kernel after its argument and mask loads: the rows of X in SI, CX,
// R10..R15 (the step index in DX once they are set), accumulators 0–7, the steps in pairs and then the odd
// one, each step a row of M multiplied into every accumulator; then C = alpha·acc, row by row.
func skinnyRowsBody(w func(string, ...any), label func(string), name string, op skinnyRowsOps) {
	rows := []string{"SI", "CX", "R10", "R11", "R12", "R13", "R14", "R15"}
	for i := 1; i < 8; i++ {
		w("LEAQ (%s)(DX*1), %s", rows[i-1], rows[i])
	}
	for i := 0; i < 8; i++ {
		op.zero(i)
	}
	w("XORQ DX, DX")
	w("MOVQ AX, R9")
	w("ANDQ $-2, R9") // steps in pairs, then the odd one
	label("loop")
	w("CMPQ DX, R9")
	w("JGE %s_tail", name)
	op.load("(BX)", op.m[0])
	op.load("(BX)(R8*1)", op.m[1])
	for s, off := range []string{"", "4"} {
		for i := 0; i < 8; i++ {
			op.fma(off, rows[i], op.m[s], i)
		}
	}
	w("LEAQ (BX)(R8*2), BX")
	w("ADDQ $0x02, DX")
	w("JMP %s_loop", name)
	label("tail")
	w("CMPQ DX, AX")
	w("JGE %s_store", name)
	op.load("(BX)", op.m[0])
	for i := 0; i < 8; i++ {
		op.fma("", rows[i], op.m[0], i)
	}
	label("store")
	w("VBROADCASTSS alpha+64(FP), %s", op.alpha)
	w("MOVQ c+40(FP), DI")
	w("MOVQ ldc+48(FP), R9")
	w("SHLQ $0x02, R9")
	for i := 0; i < 8; i++ {
		op.store(i)
		if i < 7 {
			w("ADDQ R9, DI")
		}
	}
	w("VZEROUPPER")
	w("RET")
}
