package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/trainyard/trainyard/internal/roofline"
)

// summary is one run (a shape and a G×N) of the engine, and PyTorch's same batch.
type summary struct {
	shape string
	spec  groupSpec
	// rows is the batch the bound assumes: every rollout at once, up to the service's decoding rows.
	rows            int
	tokens          int     // completion tokens of the answered rollouts
	tokensPerSecond float64 // tokens / wall time
	p50, p99        time.Duration
	rejected        int // 429s
	failed          int // other failures
	promptTokens    int // mean prompt tokens of a rollout
	// savedUsage sums the answers' usage.prompt_tokens_details.cached_tokens; savedMetric is the increase of
	// trainyard_chat_prefill_tokens_saved_total over the run, when the service has the counter.
	savedUsage  int
	savedMetric float64
	hasMetric   bool
	step, bound time.Duration // median interval between a rollout's tokens; the roofline bound at rows
	torch       *torchResult
}

// summarize reduces the rollouts of a run that took wall.
func summarize(sh string, spec groupSpec, rows int, rs []rollout, wall time.Duration, bound time.Duration) summary {
	s := summary{shape: sh, spec: spec, rows: rows, bound: bound}
	var latencies, intervals []time.Duration
	prompts := 0
	for _, r := range rs {
		switch {
		case r.status == 429:
			s.rejected++
			continue
		case r.err != nil:
			s.failed++
			continue
		}
		latencies = append(latencies, r.latency)
		if r.interval > 0 {
			intervals = append(intervals, r.interval)
		}
		s.tokens += r.usage.CompletionTokens
		s.savedUsage += r.usage.cached()
		s.promptTokens += r.usage.PromptTokens
		prompts++
	}
	if prompts > 0 {
		s.promptTokens = int(math.Round(float64(s.promptTokens) / float64(prompts)))
	}
	s.tokensPerSecond = float64(s.tokens) / wall.Seconds()
	s.p50, s.p99 = percentile(latencies, 50), percentile(latencies, 99)
	s.step = percentile(intervals, 50)
	return s
}

// header describes the conditions of the table.
type header struct {
	threads, tokens int
	backend, torch  string
	machine         roofline.Machine
	rowsNote        string
}

func printTable(w io.Writer, h header, sums []summary) {
	fmt.Fprintf(w, "rolloutbench: trainyard serve (%s kernels, bfloat16 weights, GOMAXPROCS=%d) vs PyTorch %s (float32, %d threads); random weights, Qwen3 tokenizer\n",
		h.backend, h.threads, h.torch, h.threads)
	m := h.machine
	fmt.Fprintf(w, "this machine (medians of 21 runs): bandwidth %.1f GB/s (Go loop %.1f, bf16 gemv %.1f; %d threads), kernel peak %.0f GFLOP/s (linalg.Sgemm, 1024², float32: %.0f; linalg.SgemmBF16Infer, bfloat16 (AMX tiles or dot products), 64×4096×1024: %.0f)\n",
		m.Bandwidth/1e9, m.GoBandwidth/1e9, m.KernelBandwidth/1e9, h.threads, m.KernelPeak()/1e9, m.SgemmPeak/1e9, m.DotKernelPeak/1e9)
	fmt.Fprintf(w, "the cores' arithmetic peak: %s %.0f GFLOP/s%s\n", m.FMAName, m.FMAPeak/1e9, dotNote(m))
	fmt.Fprintf(w, "each rollout: its own request (n=1), %d new tokens (ignore_eos), temperature 1, logprobs, streamed; all G×N sent at once\n\n", h.tokens)
	fmt.Fprintln(w, "| shape | G×N | engine tok/s | p50 | p99 | 429s | prefill saved | step ms | bound ms | ratio | PyTorch tok/s | engine/PyTorch |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, s := range sums {
		saved := fmt.Sprint(s.savedUsage)
		if s.hasMetric {
			saved += fmt.Sprintf(" (metric %.0f)", s.savedMetric)
		}
		ratio, step := "–", "–"
		if s.step > 0 {
			step = ms(s.step)
			ratio = fmt.Sprintf("%.1f×", float64(s.step)/float64(s.bound))
		}
		rejected := fmt.Sprint(s.rejected)
		if s.failed > 0 {
			rejected += fmt.Sprintf(" (+%d failed)", s.failed)
		}
		torch, vs := "–", "–"
		if s.torch != nil {
			tt := float64(s.torch.Tokens) / s.torch.Seconds
			torch, vs = fmt.Sprintf("%.0f", tt), fmt.Sprintf("%.2f×", s.tokensPerSecond/tt)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.shape, s.spec,
			s.tokensPerSecond, secs(s.p50), secs(s.p99), rejected, saved, step, ms(s.bound), ratio, torch, vs)
	}
	fmt.Fprintln(w)
	var notes []string
	for _, s := range sums {
		n := fmt.Sprintf("%s %s: %d-token prompts, bound at batch %d", s.shape, s.spec, s.promptTokens, s.rows)
		if s.torch != nil {
			n += fmt.Sprintf("; PyTorch prefill %.1f s, step %s", s.torch.PrefillSeconds,
				ms(time.Duration(s.torch.DecodeSeconds/float64(s.torch.Steps)*float64(time.Second))))
		}
		notes = append(notes, n)
	}
	fmt.Fprintln(w, strings.Join(notes, "\n"))
	fmt.Fprintf(w, `
engine tok/s: completion tokens / wall time from sending the first request to the last answer (prefill,
queueing and HTTP included). p50/p99: latency of one rollout, request to its last byte.
prefill saved: the answers' usage.prompt_tokens_details.cached_tokens (and the increase of
%s, when the service exports it).
step: median over the rollouts of the mean time between a rollout's tokens (one decoding step of the batch
it was in). bound: max(bf16 weights read per step / bandwidth, 2 · parameters · batch / kernel peak), over
the projections and output head only (KV cache, attention and sampling left out), at
batch = min(G×N, %s). ratio = step / bound.
PyTorch: the same G×N batch in one process, the G prompts prefilled once and copied into their N rows,
then decoded together with a KV cache; its tok/s includes the prefill.
`, savedMetric, h.rowsNote)
}

// dotNote names the bfloat16 dot-product and AMX tile peaks where the CPU has them.
func dotNote(m roofline.Machine) string {
	var s string
	if m.DotPeak > 0 {
		s += fmt.Sprintf(", %s %.0f GFLOP/s", m.DotName, m.DotPeak/1e9)
	}
	if m.AMXPeak > 0 {
		s += fmt.Sprintf(", %s %.0f GFLOP/s", m.AMXName, m.AMXPeak/1e9)
	}
	return s
}

func ms(d time.Duration) string   { return fmt.Sprintf("%.1f", d.Seconds()*1000) }
func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
