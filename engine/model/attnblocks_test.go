package model

import (
	"context"
	"math"
	"math/rand"
	"testing"
)

// TestCausalBlocks: attention by blocks of query rows (causalBlocks, each stopping at its last row's
// position) computes the logits and the LoRA gradients that the whole T × T square did, for every
// architecture (sliding windows and soft-capping included), with blocks of 16 rows over sequences of 3 to
// 70 tokens (one to four blocks, uneven ones too). Only the sums' order may differ.
func TestCausalBlocks(t *testing.T) {
	defer func(b int) { attnBlock = b }(attnBlock)
	rng := rand.New(rand.NewSource(9))
	var seqs [][]int
	for _, n := range []int{70, 3, 41, 17} {
		s := make([]int, n)
		for i := range s {
			s[i] = rng.Intn(tinyConfig().VocabSize)
		}
		seqs = append(seqs, s)
	}
	all := [NumModules]bool{true, true, true, true, true, true, true}
	for name, cfg := range archConfigs() {
		cfg.MaxSeqLen = 128
		w := randomModel(t, cfg, 5)
		lora, err := NewLoRA(cfg, 3, 6, 0, all, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range lora.Tensors(cfg) {
			for i := range ts.Data {
				ts.Data[i] = float32(rng.NormFloat64() * 0.3)
			}
		}
		run := func(block int) ([]float32, []float32) {
			attnBlock = block
			p, err := w.Forward(context.Background(), seqs, PassOptions{LoRA: lora, Keep: true})
			if err != nil {
				t.Fatal(err)
			}
			rows := make([]int, p.Rows())
			for i := range rows {
				rows[i] = i
			}
			logits := append([]float32(nil), p.Logits(rows)...)
			dl := make([]float32, len(logits))
			for i := range dl {
				dl[i] = float32(math.Sin(float64(i))) / float32(len(rows))
			}
			g := lora.ZeroLike()
			if err := p.Backward(context.Background(), rows, dl, Grads{L: g}); err != nil {
				t.Fatal(err)
			}
			var grads []float32
			for _, ts := range g.Tensors(cfg) {
				grads = append(grads, ts.Data...)
			}
			return logits, grads
		}
		wantL, wantG := run(1 << 30)
		gotL, gotG := run(16)
		for _, c := range []struct {
			what      string
			got, want []float32
		}{{"logit", gotL, wantL}, {"LoRA gradient", gotG, wantG}} {
			var scale float64
			for _, v := range c.want {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			for i := range c.want {
				if d := math.Abs(float64(c.got[i] - c.want[i])); d > 1e-5*scale || math.IsNaN(float64(c.got[i])) {
					t.Fatalf("%s: %s %d = %v by blocks, %v over the square", name, c.what, i, c.got[i], c.want[i])
				}
			}
		}
	}
}

func TestCausalBlocksCoverTheRows(t *testing.T) {
	for _, T := range []int{1, 2, 31, 64, 95, 96, 128, 226, 1000} {
		b := causalBlocks(T)
		if b[0][0] != 0 || b[len(b)-1][1] != T {
			t.Fatalf("T=%d: blocks %v do not span [0, T)", T, b)
		}
		for i := 1; i < len(b); i++ {
			if b[i][0] != b[i-1][1] || b[i][1] <= b[i][0] {
				t.Fatalf("T=%d: blocks %v are not consecutive and non-empty", T, b)
			}
		}
	}
}
