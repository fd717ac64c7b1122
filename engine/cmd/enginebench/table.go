package main

import (
	"fmt"
	"io"

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
	dot    bool
	seqLen int
	rows   []row
}

// peak is the arithmetic peak a measurement is compared with, and its name: the bfloat16 dot-product peak
// for the engine's decoding of 2–64 rows where those products take bfloat16 dot products, the float32
// multiply-add peak for everything else. Training's products are float32 throughout (the frozen base is
// stored in bfloat16 and widened in registers), prefilling 128 rows takes the float32 path, decoding one row
// is a float32 matrix-vector product, and PyTorch computes in float32.
func (t table) peak(r result) (float64, string) {
	if r.System == "engine" && r.Work == "decode" && r.Batch >= 2 && r.Batch <= 64 && t.dot && t.m.DotPeak > 0 {
		return t.m.DotPeak, "bf16"
	}
	return t.m.FMAPeak, "fp32"
}

// flopsCell is a measurement's GFLOP/s and its fraction of the peak it is compared with.
func (t table) flopsCell(r result, c roofline.Cost) string {
	peak, name := t.peak(r)
	rate := c.FLOPs / r.Seconds
	return fmt.Sprintf("%.0f (%.0f%% of %s)", rate/1e9, 100*rate/peak, name)
}

// boundCell is the roofline bound as a fraction of the measured time, and which limit sets the bound:
// memory (every byte read once at full bandwidth) or compute (every FLOP at the peak).
func (t table) boundCell(r result, c roofline.Cost) string {
	peak, _ := t.peak(r)
	bound := t.m.Bound(c, peak)
	limit := "compute"
	if c.Bytes/t.m.Bandwidth > c.FLOPs/peak {
		limit = "memory"
	}
	return fmt.Sprintf("%.0f%% (%s)", 100*bound.Seconds()/r.elapsed().Seconds(), limit)
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
	fmt.Fprint(w, `
GFLOP/s: useful FLOPs / measured time, as a percentage of the peak the row is compared with: fp32 is the
cores' float32 multiply-add peak, bf16 their bfloat16 dot-product peak (the engine's decoding of 2–64 rows
where the CPU has avx512_bf16; everything else computes in float32). Useful FLOPs (internal/roofline): a
LoRA step is 4·N_base + 6·N_adapters per token (no weight gradients for the frozen base), the output head
4·V·d per trained token, causal attention 6·heads·head_dim·T² per layer and sequence; a forward is 2·N per
token plus attention. Work a system does beyond that (recomputation, masked positions) earns nothing.
roofline: the shortest time the work could take here (max of its bytes / bandwidth and its FLOPs / the
peak) as a percentage of the measured time, and which of the two sets it.
Peak RSS: each workload is its own process (model build, warm-up, measured step); the prefill and decode
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
