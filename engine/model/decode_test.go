package model

import (
	"context"
	"math"
	"testing"
)

// TestDecodeMatchesForward checks that prefill + cached single-token decoding (batched over two sequences)
// yields the same next-token logits as a full causal forward pass.
func TestDecodeMatchesForward(t *testing.T) {
	cfg := tinyConfig()
	w := randomModel(t, cfg, 5)
	all := [NumModules]bool{true, true, true, true, true, true, true}
	lora, _ := NewLoRA(cfg, 2, 4, 0, all, 6)
	for _, ts := range lora.Tensors(cfg) {
		for i := range ts.Data {
			ts.Data[i] = float32(math.Sin(float64(i))) * 0.2
		}
	}
	ctx := context.Background()
	seqs := [][]int{{3, 1, 4, 1, 5, 9, 2, 6}, {2, 7, 1, 8, 2, 8, 1, 8}}
	const prompt = 3
	var caches []*Cache
	for _, s := range seqs {
		c := w.NewCache(16)
		if _, err := w.Prefill(ctx, c, s[:prompt], lora); err != nil {
			t.Fatal(err)
		}
		caches = append(caches, c)
	}
	single := w.NewCache(16) // batch 1 takes the matrix-vector path of the kernels
	if _, err := w.Prefill(ctx, single, seqs[0][:prompt], lora); err != nil {
		t.Fatal(err)
	}
	for i := prompt; i < len(seqs[0]); i++ {
		one, err := w.Decode(ctx, []*Cache{single}, []int{seqs[0][i]}, lora)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.Decode(ctx, caches, []int{seqs[0][i], seqs[1][i]}, lora)
		if err != nil {
			t.Fatal(err)
		}
		for s, seq := range seqs {
			p, err := w.Forward(ctx, [][]int{seq[:i+1]}, PassOptions{LoRA: lora})
			if err != nil {
				t.Fatal(err)
			}
			want := p.Logits([]int{i})
			for j, v := range want {
				if d := math.Abs(float64(v - got[s*cfg.VocabSize+j])); d > 1e-4 {
					t.Fatalf("seq %d pos %d logit %d: decode %g forward %g", s, i, j, got[s*cfg.VocabSize+j], v)
				}
				if d := math.Abs(float64(v - one[j])); s == 0 && d > 1e-4 {
					t.Fatalf("pos %d logit %d: batch-1 decode %g forward %g", i, j, one[j], v)
				}
			}
		}
	}
}
