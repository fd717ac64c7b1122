package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/trainyard/trainyard/internal/roofline"
)

// row is one workload measured on both systems, with the useful work each did.
type row struct {
	shape                 string
	engine, torch         result
	engineCost, torchCost roofline.Cost
}

// table is -compare's output: the machine's roofline, then a row per measurement.
type table struct {
	m roofline.Machine
	// dot says whether the engine's inference products of 2–64 rows take bfloat16 dot products
	// (linalg.BF16Dot), which sets the peak its batched decoding is compared with.
	dot bool
	// pairsTrain and pairsInfer say whether the engine's products with the frozen base take the pair
	// products (AMX tiles, or VDPBF16PS tiles on avx512_bf16 without AMX) in training (linalg.BF16Train) and
	// in inference of 8 rows or more (linalg.Pairs with BF16Dot).
	pairsTrain, pairsInfer bool
	seqLen                 int
	rows                   []row
}

// peak is the arithmetic peak a measurement is compared with, and its name: the bfloat16 dot-product peak
// for the engine's decoding of 2–64 rows where those products take bfloat16 dot products, the float32
// multiply-add peak for everything else. PyTorch computes in float32, and so does the engine without the
// pair products (its frozen base stored in bfloat16 and widened in registers); decoding one row is a
// float32 matrix-vector product.
func (t table) peak(r result) (float64, string) {
	if r.System == "engine" && r.Work == "decode" && r.Batch >= 2 && r.Batch <= 64 && t.dot && t.m.DotPeak > 0 {
		return t.m.DotPeak, "bf16"
	}
	return t.m.FMAPeak, "fp32"
}

// pairsPeak is the peak of the pair products' instructions and the name of a roofline that takes the base's
// FLOPs at it and the rest at the float32 peak: AMX tiles where the CPU has them, else bfloat16 dot
// products; 0 where it has neither.
func (t table) pairsPeak() (float64, string) {
	if t.m.AMXPeak > 0 {
		return t.m.AMXPeak, "AMX+fp32"
	}
	return t.m.DotPeak, "bf16+fp32"
}

// pairs reports whether the engine's products with the frozen base ran on the pair products in r: training
// steps (BF16Train), and prefilling or decoding 8 rows or more (BF16Dot).
func (t table) pairs(r result) bool {
	if peak, _ := t.pairsPeak(); r.System != "engine" || peak == 0 {
		return false
	}
	switch r.Work {
	case "rl", "sft":
		return t.pairsTrain
	case "prefill":
		return t.pairsInfer && r.Tokens/max(r.Batch, 1) >= 8
	case "decode":
		return t.pairsInfer && r.Batch >= 8
	}
	return false
}

// flopsCell is a measurement's GFLOP/s and its fraction of the peak it is compared with (the float32 peak
// where the pair products took the base's products: the yardstick, which they can pass).
func (t table) flopsCell(r result, c roofline.Cost) string {
	peak, name := t.peak(r)
	if t.pairs(r) {
		peak, name = t.m.FMAPeak, "fp32"
	}
	rate := c.FLOPs / r.Seconds
	return fmt.Sprintf("%.0f (%.0f%% of %s)", rate/1e9, 100*rate/peak, name)
}

// boundCell is the roofline bound as a fraction of the measured time, and which limit sets the bound:
// memory (every byte read once at full bandwidth) or compute (every FLOP at the peak; where the pair
// products took the base's products, those at their instructions' peak and the rest at the float32 one:
// "AMX+fp32" or "bf16+fp32").
func (t table) boundCell(r result, c roofline.Cost) string {
	peak, _ := t.peak(r)
	basePeak, name := peak, "compute"
	if t.pairs(r) {
		basePeak, name = t.pairsPeak()
	}
	bound := t.m.MixedBound(c, basePeak, peak)
	if c.Bytes/t.m.Bandwidth > c.ComputeSeconds(basePeak, peak) {
		name = "memory"
	}
	return fmt.Sprintf("%.0f%% (%s)", 100*bound.Seconds()/r.elapsed().Seconds(), name)
}

func (t table) print(w io.Writer) {
	m := t.m
	dot := "no bf16 dot products on this CPU"
	if m.DotPeak > 0 {
		dot = fmt.Sprintf("bf16 %.0f GFLOP/s (%s", m.DotPeak/1e9, m.DotName)
		if m.DotKernelPeak > 0 {
			dot += fmt.Sprintf("; linalg.SgemmBF16Infer 64×4096×1024: %.0f", m.DotKernelPeak/1e9)
		}
		dot += ")"
		if !t.dot && !t.pairsTrain {
			dot += ", not used: no faster than the fp32 FMAs here (linalg.BF16Pays)"
		}
	}
	if m.AMXPeak > 0 {
		dot += fmt.Sprintf(", AMX %.0f GFLOP/s (%s)", m.AMXPeak/1e9, m.AMXName)
	}
	fmt.Fprintf(w, "this machine (%d threads; each figure the median of 21 runs, the higher of a measure before and after the rows): fp32 %.0f GFLOP/s (%s; linalg.Sgemm 1024²: %.0f), %s, bandwidth %.1f GB/s\n\n",
		m.Threads, m.FMAPeak/1e9, m.FMAName, m.SgemmPeak/1e9, dot, m.Bandwidth/1e9)
	fmt.Fprintln(w, "| shape | work | engine tokens/s | PyTorch tokens/s | engine / PyTorch | engine GFLOP/s | PyTorch GFLOP/s | engine roofline | PyTorch roofline | engine peak RSS | PyTorch peak RSS |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range t.rows {
		e, p := r.engine, r.torch
		et, pt := float64(e.Tokens)/e.Seconds, float64(p.Tokens)/p.Seconds
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.2f× | %s | %s | %s | %s | %s | %s |\n", r.shape, t.label(e, p),
			et, pt, et/pt, t.flopsCell(e, r.engineCost), t.flopsCell(p, r.torchCost),
			t.boundCell(e, r.engineCost), t.boundCell(p, r.torchCost), gib(e.rss), gib(p.rss))
	}
	var spread []string
	for _, r := range t.rows {
		if len(r.engine.StepSeconds) > 1 || len(r.torch.StepSeconds) > 1 {
			spread = append(spread, fmt.Sprintf("%s %s: engine %s, PyTorch %s", r.shape, r.engine.Work,
				secondsList(r.engine.StepSeconds), secondsList(r.torch.StepSeconds)))
		}
	}
	if len(spread) > 0 {
		fmt.Fprintf(w, "\nTraining rows: the median of each system's measured steps (seconds, in order): %s.\n", strings.Join(spread, "; "))
	}
	fmt.Fprint(w, `
GFLOP/s: useful FLOPs / measured time, as a percentage of the peak the row is compared with: fp32 is the
cores' float32 multiply-add peak, bf16 their bfloat16 dot-product peak (the engine's decoding of 2–7 rows
where the CPU has avx512_bf16 and it pays; PyTorch computes in float32). Where the CPU has AMX tiles, or
avx512_bf16 that outruns its FMAs (linalg.BF16Pays: AMD's Zen 4 and 5, not Intel's Xeons), the engine's
products with the frozen base (training, and 8 rows or more of inference) run on them, with
the activations rounded to bfloat16: those rows are still given as a share of the float32 peak, and their
roofline takes the base's FLOPs at the AMX tiles' or the dot products' peak and the rest (attention,
adapters) at the float32 one (AMX+fp32, bf16+fp32). Useful FLOPs (internal/roofline): a
LoRA step is 4·N_base + 6·N_adapters per token (no weight gradients for the frozen base), the output head
4·V·d per trained token, causal attention 6·heads·head_dim·T² per layer and sequence; a forward is 2·N per
token plus attention. Work a system does beyond that (recomputation, masked positions) earns nothing.
roofline: the shortest time the work could take here (max of its bytes / bandwidth and its FLOPs / the
peak) as a percentage of the measured time, and which of the two sets it.
Peak RSS: each workload is its own process (model build, warm-up, measured steps); the prefill and decode
rows share one.
`)
}

// label names a row's work.
func (t table) label(e, p result) string {
	label := map[string]string{"rl": "RL step", "sft": "SFT step", "prefill": "prefill", "decode": "decode"}[e.Work]
	switch {
	case e.Seqs > 0 && e.Seqs == p.Seqs:
		label += fmt.Sprintf(", %d × %d", e.Seqs, t.seqLen)
	case e.Seqs > 0:
		label += fmt.Sprintf(", %d × %d (PyTorch %d × %d)", e.Seqs, t.seqLen, p.Seqs, t.seqLen)
	case e.Work == "prefill":
		label += fmt.Sprintf(", %d tokens", e.Tokens)
	default:
		label += fmt.Sprintf(", batch %d", e.Batch)
	}
	return label
}

// secondsList prints step times as "7.05, 7.42, 8.50".
func secondsList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, ", ")
}
