package roofline

import (
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/model"
)

// tiny is a one-layer model small enough to count by hand: projections q 4×4, k and v 2×4, o 4×4, gate and
// up 8×4, down 4×8 (144 weights); rank-1 adapters on them hold 64; the head 10×4.
var tiny = model.Config{VocabSize: 10, Dim: 4, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 2, Hidden: 8}

func TestTrainStepCountsByHand(t *testing.T) {
	// 2 sequences of 3 tokens, the last 2 trained:
	// base 2·3·4·144 = 3456, adapters 2·3·6·64 = 2304, head 2·2·4·40 = 640, attention 2·6·(2·2)·3² = 432.
	c := TrainStep(tiny, 2, 3, 2, 1)
	if c.FLOPs != 3456+2304+640+432 {
		t.Errorf("FLOPs = %v, want 6832", c.FLOPs)
	}
	if c.Bytes != 2*(144+40) {
		t.Errorf("Bytes = %v, want the bfloat16 base, 368", c.Bytes)
	}
	// More trainable tokens than the sequence holds count as all of them.
	if a, b := TrainStep(tiny, 2, 3, 9, 1), TrainStep(tiny, 2, 3, 3, 1); a != b {
		t.Errorf("trainable beyond T: %v, want %v", a, b)
	}
}

func TestInferenceCountsByHand(t *testing.T) {
	// Prefill of 3 tokens: 3·2·144 = 864, attention 2·4·9 = 72, head 2·40 = 80; float32 weights 4·184 and
	// keys and values 2·2·3 floats.
	p := Prefill(tiny, 3, 4)
	if p.FLOPs != 864+72+80 || p.Bytes != 4*184+4*12 {
		t.Errorf("Prefill = %+v, want 1016 FLOPs and 784 bytes", p)
	}
	// Two steps of 3 rows after 5 positions: contexts 6 and 7, each row 2·184 + 4·4·ctx FLOPs.
	d := Decode(tiny, 3, 5, 2, 2)
	if want := 3*(2*184+16*6) + 3*(2*184+16*7); d.FLOPs != float64(want) {
		t.Errorf("Decode FLOPs = %v, want %d", d.FLOPs, want)
	}
	if want := 2*2*184 + 3*4*4*(6+7); d.Bytes != float64(want) {
		t.Errorf("Decode bytes = %v, want %d", d.Bytes, want)
	}
	if w := DecodeStepWeights(tiny, 3); w.FLOPs != 3*2*184 || w.Bytes != 2*184 {
		t.Errorf("DecodeStepWeights = %+v", w)
	}
}

func TestDecodeStepWeightsAndBound(t *testing.T) {
	// SmolLM2-135M's body on Qwen3's vocabulary: 30 layers of 576×576 (q, o), 192×576 (k, v) and
	// 3 × 576×1536 (gate, up, down), plus a 151,936 × 576 head.
	cfg := model.Config{VocabSize: 151936, Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, HeadDim: 64, Hidden: 1536}
	params := 30*(2*576*576+2*192*576+3*576*1536) + 151936*576
	c := DecodeStepWeights(cfg, 32)
	if c.Bytes != 2*float64(params) || c.FLOPs != 2*float64(params)*32 {
		t.Fatalf("cost = %+v, want %d bytes and %d FLOPs", c, 2*params, 2*params*32)
	}
	m := Machine{Bandwidth: 20e9}
	// Bandwidth-bound at batch 1, compute-bound at batch 32.
	if got, want := m.Bound(DecodeStepWeights(cfg, 1), 100e9), time.Duration(2*float64(params)/20e9*1e9); got != want {
		t.Errorf("batch 1 bound = %v, want %v (weights / bandwidth)", got, want)
	}
	if got, want := m.Bound(c, 100e9), time.Duration(2*float64(params)*32/100e9*1e9); got != want {
		t.Errorf("batch 32 bound = %v, want %v (FLOPs / peak)", got, want)
	}
}

// TestMixedBound: a step's products with the base at the AMX peak and the rest at the FMA peak add up.
func TestMixedBound(t *testing.T) {
	m := Machine{Bandwidth: 20e9}
	c := Cost{FLOPs: 10e9, BaseFLOPs: 8e9, Bytes: 1e6}
	if got, want := m.MixedBound(c, 1000e9, 100e9), 28*time.Millisecond; got != want {
		t.Errorf("MixedBound = %v, want %v (8 GFLOP at 1 TFLOP/s + 2 at 100 GFLOP/s)", got, want)
	}
	if got, want := m.Bound(c, 100e9), 100*time.Millisecond; got != want {
		t.Errorf("Bound = %v, want %v", got, want)
	}
}

func TestMaxKeepsTheHigherFigures(t *testing.T) {
	a := Machine{Threads: 2, FMAPeak: 30e9, FMAName: "AVX2 FMA", SgemmPeak: 40e9, GoBandwidth: 20e9, KernelBandwidth: 4e9, Bandwidth: 20e9}
	b := Machine{Threads: 2, FMAPeak: 170e9, FMAName: "AVX2 FMA", SgemmPeak: 30e9, GoBandwidth: 10e9, KernelBandwidth: 25e9, Bandwidth: 25e9}
	m := a.Max(b)
	if m.FMAPeak != 170e9 || m.SgemmPeak != 40e9 || m.GoBandwidth != 20e9 || m.KernelBandwidth != 25e9 || m.Bandwidth != 25e9 {
		t.Errorf("Max = %+v", m)
	}
}
