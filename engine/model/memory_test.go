package model

import (
	"context"
	"testing"
)

// TestTrainPassBytes: the estimate of a training pass's arena memory is exactly what a Forward with kept
// activations, a chunked head gradient and BackwardHidden take from the arena, with and without LoRA
// dropout, for sequences of different lengths (two of them after the first as their shared prefix too:
// TrainSeqBytes); InferPassBytes likewise for a pass without backward.
func TestTrainPassBytes(t *testing.T) {
	qk := tinyConfig()
	qk.QKNorm, qk.Bias = true, [NumModules]bool{ModQ: true, ModK: true, ModV: true}
	for _, cfg := range []Config{tinyConfig(), qk, tinyGemma3(true)} {
		w := randomModel(t, cfg, 1)
		ctx := context.Background()
		lens := make([]int, len(testSeqs))
		for i, s := range testSeqs {
			lens[i] = len(s)
		}
		targets := [NumModules]bool{ModQ: true, ModV: true, ModGate: true, ModDown: true}
		for _, dropout := range []float32{0, 0.1} {
			lora, err := NewLoRA(cfg, 3, 6, dropout, targets, 1)
			if err != nil {
				t.Fatal(err)
			}
			var ar Arena
			p, err := w.Forward(ctx, testSeqs, PassOptions{LoRA: lora, Keep: true, Arena: &ar, DropoutSeed: 1})
			if err != nil {
				t.Fatal(err)
			}
			rows := []int{0, 2, 7}
			p.AddHeadGrad(rows[:2], p.Logits(rows[:2]), Grads{L: lora.ZeroLike()})
			p.AddHeadGrad(rows[2:], p.Logits(rows[2:]), Grads{L: lora.ZeroLike()})
			if err := p.BackwardHidden(ctx, Grads{L: lora.ZeroLike()}); err != nil {
				t.Fatal(err)
			}
			if got, want := ar.Used(), TrainPassBytes(cfg, 3, targets, dropout > 0, lens); got != want {
				t.Errorf("qk norm %v, dropout %g: training pass took %d bytes, TrainPassBytes says %d", cfg.QKNorm, dropout, got, want)
			}
			if ar.Bytes() < ar.Used() {
				t.Errorf("arena holds %d bytes but handed out %d", ar.Bytes(), ar.Used())
			}
			// The second and third sequences after the first as their shared prefix.
			ar = Arena{}
			if p, err = w.Forward(ctx, testSeqs, PassOptions{LoRA: lora, Keep: true, Arena: &ar, DropoutSeed: 1, Prefix: []int{-1, 0, 0}}); err != nil {
				t.Fatal(err)
			}
			p.AddHeadGrad(rows, p.Logits(rows), Grads{L: lora.ZeroLike()})
			if err := p.BackwardHidden(ctx, Grads{L: lora.ZeroLike()}); err != nil {
				t.Fatal(err)
			}
			want := TrainSeqBytes(cfg, 3, targets, dropout > 0, lens[0], 0)
			for _, T := range lens[1:] {
				want += TrainSeqBytes(cfg, 3, targets, dropout > 0, T, lens[0])
			}
			if got := ar.Used(); got != want {
				t.Errorf("qk norm %v, dropout %g, a shared prefix: training pass took %d bytes, TrainSeqBytes say %d", cfg.QKNorm, dropout, got, want)
			}
		}
		var ar Arena
		if _, err := w.Forward(ctx, testSeqs, PassOptions{Arena: &ar}); err != nil {
			t.Fatal(err)
		}
		if got, want := ar.Used(), InferPassBytes(cfg, 0, 0, lens[0]+lens[1]+lens[2]); got != want {
			t.Errorf("qk norm %v: pass without backward took %d bytes, InferPassBytes says %d", cfg.QKNorm, got, want)
		}
	}
}

// TestWeightBytes: the memory of weights computed from a config (Config.WeightBytes and the rotary table)
// matches the weights', float32 and bf16, tied and untied, with biases and q/k norms, and Gemma 3's.
func TestWeightBytes(t *testing.T) {
	qk := tinyConfig()
	qk.QKNorm, qk.Bias, qk.TiedEmbeddings = true, [NumModules]bool{ModQ: true, ModK: true, ModV: true}, true
	for _, cfg := range []Config{tinyConfig(), qk, tinyGemma3(false)} {
		for _, dt := range []DType{F32, BF16} {
			w, err := NewRandomWeights(cfg, dt, 1)
			if err != nil {
				t.Fatal(err)
			}
			if w.DType() != dt {
				t.Fatalf("NewRandomWeights(%s) gave %s", dt, w.DType())
			}
			if got, want := cfg.WeightBytes(dt)+RopeBytes(cfg), w.MemoryBytes(); got != want {
				t.Errorf("%s, tied %v: WeightBytes + RopeBytes = %d, weights take %d", dt, cfg.TiedEmbeddings, got, want)
			}
		}
	}
}

// TestArenaReuse: a second cycle of the same requests reuses the blocks of the first (no new memory), and a
// larger cycle adds blocks without dropping the old ones.
func TestArenaReuse(t *testing.T) {
	var a Arena
	sizes := []int{1000, 70000, 5, 200000, 3}
	for cycle := 0; cycle < 2; cycle++ {
		a.Reset()
		for _, n := range sizes {
			b := a.alloc(n)
			if len(b) != n || cap(b) != n {
				t.Fatalf("alloc(%d) gave len %d cap %d", n, len(b), cap(b))
			}
			b[n-1] = 1
		}
	}
	held := a.Bytes()
	a.Reset()
	for _, n := range sizes {
		a.dirty(n)
	}
	if a.Bytes() != held {
		t.Fatalf("same requests grew the arena from %d to %d bytes", held, a.Bytes())
	}
	a.dirty(1 << 20)
	if a.Bytes() <= held || a.Used() != 4*int64(1000+70000+5+200000+3+1<<20) {
		t.Fatalf("after a larger request: holds %d (was %d), used %d", a.Bytes(), held, a.Used())
	}
}
