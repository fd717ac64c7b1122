package model

import (
	"context"
	"math"
	"testing"

	"github.com/trainyard/trainyard/engine/safetensors"
)

// rounded returns float32 weights holding w's matrices rounded to bfloat16: the exact values a bfloat16
// copy of w computes with.
func rounded(w *Weights) *Weights {
	r := w.Clone()
	for _, t := range r.Tensors() {
		if t.mat != nil {
			for i, x := range t.Data {
				t.Data[i] = math.Float32frombits(uint32(toBF16(x)) << 16)
			}
		}
	}
	return r
}

func toBF16(v float32) uint16 {
	b := math.Float32bits(v)
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// TestBF16Weights checks that bfloat16 storage changes nothing but the weights' rounding: logits and LoRA
// gradients of a bfloat16 model equal those of float32 weights holding the rounded values (up to the order
// of float32 sums), for every architecture, through the full pass and the KV-cache decode; and that it
// halves the memory.
func TestBF16Weights(t *testing.T) {
	ctx := context.Background()
	all := [NumModules]bool{true, true, true, true, true, true, true}
	for name, cfg := range archConfigs() {
		w := randomModel(t, cfg, 11)
		wb, wr := w.ToBF16(), rounded(w)
		if wb.DType() != BF16 || wr.DType() != F32 {
			t.Fatalf("%s: dtypes %s %s", name, wb.DType(), wr.DType())
		}
		lora, _ := NewLoRA(cfg, 2, 4, 0, all, 6)
		for _, ts := range lora.Tensors(cfg) {
			for i := range ts.Data {
				ts.Data[i] = float32(math.Cos(float64(i))) * 0.2
			}
		}
		gb, gr := lora.ZeroLike(), lora.ZeroLike()
		lb, lr := ceLoss(t, wb, lora, Grads{L: gb}), ceLoss(t, wr, lora, Grads{L: gr})
		if math.Abs(lb-lr) > 1e-5*math.Abs(lr) {
			t.Errorf("%s: loss %v with bf16 weights, %v with rounded float32", name, lb, lr)
		}
		rt := gr.Tensors(cfg)
		for i, ts := range gb.Tensors(cfg) {
			for j, v := range ts.Data {
				if d := math.Abs(float64(v - rt[i].Data[j])); d > 1e-5+1e-4*math.Abs(float64(rt[i].Data[j])) {
					t.Fatalf("%s: %s[%d] = %v, rounded float32 gives %v", name, ts.Name, j, v, rt[i].Data[j])
				}
			}
		}
		seq := []int{3, 1, 4, 1, 5, 9, 2}
		c := wb.NewCache(16)
		if _, err := wb.Prefill(ctx, c, seq[:4], lora); err != nil {
			t.Fatal(err)
		}
		got, err := wb.Decode(ctx, []*Cache{c}, []int{seq[4]}, lora)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := wr.Forward(ctx, [][]int{seq[:5]}, PassOptions{LoRA: lora})
		for j, v := range p.Logits([]int{4}) {
			if d := math.Abs(float64(v - got[j])); d > 1e-4 {
				t.Fatalf("%s: decoded logit %d = %v, rounded float32 forward %v", name, j, got[j], v)
			}
		}
		if wb.Bytes() != cfg.WeightBytes(BF16) || w.Bytes() != cfg.WeightBytes(F32) {
			t.Errorf("%s: %d and %d bytes, WeightBytes says %d and %d", name, wb.Bytes(), w.Bytes(), cfg.WeightBytes(BF16), cfg.WeightBytes(F32))
		}
		if 20*wb.Bytes() > 11*w.Bytes() { // matrices halved; the float32 vectors are a few percent here
			t.Errorf("%s: bf16 %d bytes, float32 %d", name, wb.Bytes(), w.Bytes())
		}
		// Loading a float32 checkpoint as BF16 rounds it the same way.
		m := map[string]safetensors.Tensor{}
		for _, st := range SafetensorsList(w.Tensors()) {
			m[st.Name] = st
		}
		lw, err := LoadWeights(cfg, m, BF16)
		if err != nil {
			t.Fatal(err)
		}
		for i, ts := range lw.Tensors() {
			want := wb.Tensors()[i]
			if len(ts.BF16) != len(want.BF16) || (ts.BF16 != nil && ts.BF16[len(ts.BF16)-1] != want.BF16[len(ts.BF16)-1]) {
				t.Fatalf("%s: loaded %s differs", name, ts.Name)
			}
		}
	}
}

func TestFullGradientsNeedFloat32(t *testing.T) {
	w := randomModel(t, tinyConfig(), 1).ToBF16()
	p, err := w.Forward(context.Background(), testSeqs, PassOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(context.Background(), []int{0}, make([]float32, w.Cfg.VocabSize), Grads{W: w.Clone()}); err == nil {
		t.Fatal("bfloat16 gradient buffer accepted")
	}
}
