package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The peak loops issue independent multiply-adds on registers only (no loads), enough accumulators to cover
// the instructions' latency on current cores (4–5 cycles, 2 per cycle), so they run at the rate the core
// retires them: the arithmetic peak no product can exceed. linalg compares two of them once per process
// (whether bfloat16 dot products outrun float32 FMAs on this core) and internal/roofline measures the
// machine's peaks with them.

// fmaPeaks writes fmaPeakAVX512 and fmaPeakAVX2: 12 VFMADD231PS per iteration on zmm (ymm) registers.
func fmaPeaks() {
	for _, is := range []struct {
		name string
		vec  func() reg.VecVirtual
	}{{"AVX512", ZMM}, {"AVX2", YMM}} {
		TEXT("fmaPeak"+is.name, NOSPLIT, "func(iters int)")
		Doc(fmt.Sprintf("fmaPeak%s runs iters iterations of 12 independent VFMADD231PS on %s registers.", is.name,
			map[string]string{"AVX512": "zmm", "AVX2": "ymm"}[is.name]))
		n := Load(Param("iters"), GP64())
		x, y := is.vec(), is.vec()
		VXORPS(x, x, x)
		VXORPS(y, y, y)
		acc := make([]reg.VecVirtual, 12)
		for i := range acc {
			acc[i] = is.vec()
			VXORPS(acc[i], acc[i], acc[i])
		}
		loop := "fma_peak_" + strings.ToLower(is.name)
		Label(loop)
		for _, a := range acc {
			VFMADD231PS(x, y, a)
		}
		DECQ(n)
		JNZ(LabelRef(loop))
		VZEROUPPER()
		RET()
	}
}

// dotPeak writes dotPeak (text: Go's assembler lacks VDPBF16PS): 16 VDPBF16PS per iteration on zmm
// registers, Z0–Z15 accumulating the products of Z16–Z19 with Z20, all pairs of bfloat16 ones (0x3F80): on
// registers of zeros an instruction may run faster than on any data a product multiplies (AMX's did).
func dotPeak(s, g *strings.Builder) {
	g.WriteString("\n// dotPeak runs iters iterations of 16 independent VDPBF16PS on zmm registers (avx512_bf16).\n" +
		"//\n//go:noescape\nfunc dotPeak(iters int)\n")
	s.WriteString("\n// func dotPeak(iters int)\n// Requires: AVX512F, AVX512_BF16\nTEXT ·dotPeak(SB), NOSPLIT, $0-8\n")
	s.WriteString("\tMOVQ iters+0(FP), CX\n\tMOVL $0x3f803f80, AX\n")
	for r := 16; r <= 20; r++ {
		fmt.Fprintf(s, "\tVPBROADCASTD AX, Z%d\n", r)
	}
	for r := range 16 {
		fmt.Fprintf(s, "\tVPXORD Z%d, Z%d, Z%d\n", r, r, r)
	}
	s.WriteString("\ndot_peak:\n")
	for r := range 16 {
		fmt.Fprintf(s, "\t%s // VDPBF16PS Z20, Z%d, Z%d\n", vdpbf16ps(r, 16+r/4, 20), 16+r/4, r)
	}
	s.WriteString("\tDECQ CX\n\tJNZ dot_peak\n\tVZEROUPPER\n\tRET\n")
}
