package main

import (
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/model"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("percentile sorted its argument")
	}
	if got := percentile([]time.Duration{7, 3, 5}, 50); got != 5 {
		t.Errorf("p50 of 3 = %v, want 5", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %v", got)
	}
}

func TestDecodeStepCostAndBound(t *testing.T) {
	t.Parallel()
	// SmolLM2-135M's body on Qwen3's vocabulary: 30 layers of 576×576 (q, o), 192×576 (k, v) and
	// 3 × 576×1536 (gate, up, down), plus a 151,936 × 576 head.
	cfg := model.Config{VocabSize: 151936, Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, HeadDim: 64, Hidden: 1536}
	params := 30*(2*576*576+2*192*576+3*576*1536) + 151936*576
	c := decodeStepCost(cfg, 32)
	if c.WeightBytes != 2*float64(params) || c.FLOPs != 2*float64(params)*32 {
		t.Fatalf("cost = %+v, want %d bytes and %d FLOPs", c, 2*params, 2*params*32)
	}
	m := machine{Bandwidth: 20e9, KernelPeak: 100e9}
	// Bandwidth-bound at batch 1, compute-bound at batch 32.
	if got, want := m.bound(decodeStepCost(cfg, 1)), time.Duration(2*float64(params)/20e9*1e9); got != want {
		t.Errorf("batch 1 bound = %v, want %v (weights / bandwidth)", got, want)
	}
	if got, want := m.bound(c), time.Duration(2*float64(params)*32/100e9*1e9); got != want {
		t.Errorf("batch 32 bound = %v, want %v (FLOPs / peak)", got, want)
	}
}

func TestParseGroups(t *testing.T) {
	t.Parallel()
	got, err := parseGroups(" 4x8, 8X16,2×3 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []groupSpec{{4, 8}, {8, 16}, {2, 3}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"", "4", "4x", "x8", "0x8", "4x-1", "4y8"} {
		if _, err := parseGroups(bad); err == nil {
			t.Errorf("parseGroups(%q) accepted", bad)
		}
	}
}

func TestSumCounter(t *testing.T) {
	t.Parallel()
	text := `# HELP trainyard_chat_prefill_tokens_saved_total Prompt tokens not prefilled.
# TYPE trainyard_chat_prefill_tokens_saved_total counter
trainyard_chat_prefill_tokens_saved_total{model="a"} 120
trainyard_chat_prefill_tokens_saved_total{model="b",x="}"} 30 1700000000000
trainyard_chat_prefill_tokens_saved_total_other 99
trainyard_chat_tokens_total{kind="prompt"} 7
`
	sum, ok, err := sumCounter(strings.NewReader(text), savedMetric)
	if err != nil || !ok || sum != 150 {
		t.Fatalf("sum = %v, %v, %v; want 150, true, nil", sum, ok, err)
	}
	sum, ok, err = sumCounter(strings.NewReader("plain 3\nplain_x 4\n"), "plain")
	if err != nil || !ok || sum != 3 {
		t.Fatalf("unlabelled: %v, %v, %v; want 3, true, nil", sum, ok, err)
	}
	if _, ok, err := sumCounter(strings.NewReader(text), "trainyard_missing_total"); ok || err != nil {
		t.Fatalf("missing counter: ok %v, err %v", ok, err)
	}
}
