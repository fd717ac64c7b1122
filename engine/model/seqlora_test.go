package model

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// TestAdaptersInOneBatch: prompts under three adapters of different ranks and targets and the base model,
// prefilled and decoded together with ExtendAdapters and DecodeAdapters, get the logits and caches each
// gets with its adapter alone.
func TestAdaptersInOneBatch(t *testing.T) {
	for name, cfg := range archConfigs() {
		for _, dt := range []DType{F32, BF16} {
			t.Run(name+"/"+string(dt), func(t *testing.T) {
				w := randomModel(t, cfg, 11)
				if dt == BF16 {
					w = w.ToBF16()
				}
				all := [NumModules]bool{true, true, true, true, true, true, true}
				attn := [NumModules]bool{true, false, true, false, false, false, false}
				var adapters []*LoRA
				for i, c := range []struct {
					rank    int
					targets [NumModules]bool
				}{{2, all}, {4, attn}, {1, all}} {
					a, _ := NewLoRA(cfg, c.rank, 4, 0, c.targets, int64(20+i))
					for _, ts := range a.Tensors(cfg) {
						for j := range ts.Data {
							ts.Data[j] = float32(math.Sin(float64(j+i))) * 0.2
						}
					}
					adapters = append(adapters, a)
				}
				// Consecutive sequences share an adapter (one run of two), and the base model sits between adapters.
				loras := []*LoRA{adapters[0], adapters[0], nil, adapters[1], adapters[2]}
				prompts := [][]int{{3, 1, 4}, {1, 5, 9, 2, 6}, {5, 3}, {5, 8, 9, 7}, {9, 3, 2, 3}}
				steps := [][]int{{8, 4}, {6, 2}, {6, 4}, {3, 3}, {8, 3}}
				ctx := context.Background()
				V := cfg.VocabSize
				caches := make([]*Cache, len(prompts))
				for i := range caches {
					caches[i] = w.NewCache(12)
				}
				// The passes take their buffers from an arena, as the batcher's do, filled with NaN before each:
				// a pass must write every buffer it reads.
				ar := new(Arena)
				got, err := w.ExtendAdapters(ctx, caches, prompts, loras, nil, ar)
				if err != nil {
					t.Fatal(err)
				}
				alone := make([]*Cache, len(prompts))
				for i, pr := range prompts {
					alone[i] = w.NewCache(12)
					want, err := w.Prefill(ctx, alone[i], pr, loras[i])
					if err != nil {
						t.Fatal(err)
					}
					closeAll(t, fmt.Sprintf("prompt %d prefill logits", i), got[i*V:(i+1)*V], want)
				}
				for s := range steps[0] {
					tokens := make([]int, len(prompts))
					for i := range tokens {
						tokens[i] = steps[i][s]
					}
					poison(ar)
					got, err := w.DecodeAdapters(ctx, caches, tokens, loras, nil, ar)
					if err != nil {
						t.Fatal(err)
					}
					for i := range prompts {
						want, err := w.Decode(ctx, alone[i:i+1], tokens[i:i+1], loras[i])
						if err != nil {
							t.Fatal(err)
						}
						closeAll(t, fmt.Sprintf("step %d sequence %d logits", s, i), got[i*V:(i+1)*V], want)
					}
				}
				if _, err := w.DecodeAdapters(ctx, caches, []int{1, 2, 3, 4, 5}, loras[:2], nil, ar); err == nil {
					t.Fatal("adapters for 2 of 5 caches accepted")
				}
			})
		}
	}
}

// poison fills every block of the arena with NaN.
func poison(ar *Arena) {
	for _, b := range ar.blocks {
		for i := range b {
			b[i] = float32(math.NaN())
		}
	}
}
