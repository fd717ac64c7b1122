package main

import (
	"strings"
	"testing"

	"github.com/trainyard/trainyard/internal/roofline"
)

func TestRowsComparedWithTheirPeak(t *testing.T) {
	t.Parallel()
	tb := table{m: roofline.Machine{FMAPeak: 100e9, DotPeak: 200e9, Bandwidth: 10e9}, dot: true}
	c := roofline.Cost{FLOPs: 50e9, Bytes: 1e9}
	cases := []struct {
		r          result
		flops, lim string
	}{
		// Training: float32 products, compute-bound (0.5 s at peak against 0.1 s of reading).
		{result{System: "engine", Work: "rl", Seconds: 1}, "50 (50% of fp32)", "50% (compute)"},
		// Batched decoding in the engine takes bfloat16 dot products: half the time at peak.
		{result{System: "engine", Work: "decode", Batch: 8, Seconds: 1}, "50 (25% of bf16)", "25% (compute)"},
		{result{System: "engine", Work: "decode", Batch: 1, Seconds: 1}, "50 (50% of fp32)", "50% (compute)"},
		{result{System: "pytorch", Work: "decode", Batch: 8, Seconds: 2}, "25 (25% of fp32)", "25% (compute)"},
	}
	for _, tc := range cases {
		if got := tb.flopsCell(tc.r, c); got != tc.flops {
			t.Errorf("%+v: GFLOP/s cell %q, want %q", tc.r, got, tc.flops)
		}
		if got := tb.boundCell(tc.r, c); got != tc.lim {
			t.Errorf("%+v: roofline cell %q, want %q", tc.r, got, tc.lim)
		}
	}
	// Reading 10 GB at 10 GB/s outlasts the FLOPs: the memory sets the bound.
	if got := tb.boundCell(result{System: "engine", Work: "decode", Batch: 1, Seconds: 4}, roofline.Cost{FLOPs: 1e9, Bytes: 10e9}); got != "25% (memory)" {
		t.Errorf("memory-bound cell %q", got)
	}
	// Where AMX tiles take the base's products: training compared with the float32 peak, its roofline the
	// base's FLOPs at the tiles' peak plus the rest at the float32 one (0.04 + 0.1 s of 1 s).
	amx := table{m: roofline.Machine{FMAPeak: 100e9, DotPeak: 200e9, AMXPeak: 1000e9, Bandwidth: 10e9}, dot: true, pairsTrain: true, pairsInfer: true}
	mixed := roofline.Cost{FLOPs: 50e9, BaseFLOPs: 40e9, Bytes: 1e9}
	if got := amx.flopsCell(result{System: "engine", Work: "rl", Seconds: 1}, mixed); got != "50 (50% of fp32)" {
		t.Errorf("AMX training GFLOP/s cell %q", got)
	}
	if got := amx.boundCell(result{System: "engine", Work: "rl", Seconds: 1}, mixed); got != "14% (AMX+fp32)" {
		t.Errorf("AMX training roofline cell %q", got)
	}
	if got := amx.boundCell(result{System: "pytorch", Work: "rl", Seconds: 1}, mixed); got != "50% (compute)" {
		t.Errorf("PyTorch's roofline cell %q where the engine has AMX", got)
	}
	// Where VDPBF16PS tiles take them (avx512_bf16, no AMX): the base's FLOPs at the dot products' peak
	// (0.2 + 0.1 s of 1 s), and batched decoding's share of the float32 peak too.
	dots := table{m: roofline.Machine{FMAPeak: 100e9, DotPeak: 200e9, Bandwidth: 10e9}, dot: true, pairsTrain: true, pairsInfer: true}
	if got := dots.boundCell(result{System: "engine", Work: "sft", Seconds: 1}, mixed); got != "30% (bf16+fp32)" {
		t.Errorf("VDPBF16PS training roofline cell %q", got)
	}
	if got := dots.flopsCell(result{System: "engine", Work: "decode", Batch: 8, Seconds: 1}, mixed); got != "50 (50% of fp32)" {
		t.Errorf("VDPBF16PS decoding GFLOP/s cell %q", got)
	}
	// Without bfloat16 dot products every row is compared with the float32 peak.
	tb.dot = false
	if _, name := tb.peak(result{System: "engine", Work: "decode", Batch: 8}); name != "fp32" {
		t.Errorf("batched decoding without dot products compared with %s", name)
	}
}

// TestMedianSteps: a training row is the median of its measured steps, and the table lists them all.
func TestMedianSteps(t *testing.T) {
	t.Parallel()
	if got := median([]float64{8.5, 7.0, 7.4}); got != 7.4 {
		t.Errorf("median of three %g, want 7.4", got)
	}
	if got := median([]float64{2, 1, 4, 3}); got != 2.5 {
		t.Errorf("median of four %g, want 2.5", got)
	}
	tb := table{m: roofline.Machine{FMAPeak: 100e9, Bandwidth: 10e9}, rows: []row{{shape: "S",
		engine: result{System: "engine", Work: "rl", Tokens: 100, Seconds: 7.4, StepSeconds: []float64{8.5, 7, 7.4}},
		torch:  result{System: "pytorch", Work: "rl", Tokens: 100, Seconds: 20, StepSeconds: []float64{21, 20, 19}}}}}
	var b strings.Builder
	tb.print(&b)
	if want := "S rl: engine 8.50, 7.00, 7.40, PyTorch 21.00, 20.00, 19.00"; !strings.Contains(b.String(), want) {
		t.Errorf("table without %q:\n%s", want, b.String())
	}
}
