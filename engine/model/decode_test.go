package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestDecodeMatchesForward checks that prefill + cached single-token decoding (batched over two sequences)
// yields the same next-token logits as a full causal forward pass.
func TestDecodeMatchesForward(t *testing.T) {
	for name, cfg := range archConfigs() {
		for _, dt := range []DType{F32, BF16} {
			t.Run(name+"/"+string(dt), func(t *testing.T) { testDecodeMatchesForward(t, cfg, dt) })
		}
	}
}

func testDecodeMatchesForward(t *testing.T, cfg Config, dtype DType) {
	w := randomModel(t, cfg, 5)
	if dtype == BF16 {
		w = w.ToBF16()
	}
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

// TestPrefillBatchMatchesSingle checks that prefilling prompts of different lengths together gives each the
// last-position logits and KV cache it gets prefilled alone.
func TestPrefillBatchMatchesSingle(t *testing.T) {
	for name, cfg := range archConfigs() {
		t.Run(name, func(t *testing.T) {
			w := randomModel(t, cfg, 7)
			ctx := context.Background()
			prompts := [][]int{{3, 1, 4, 1, 5, 9, 2}, {2}, {7, 1, 8, 2, 8}}
			caches := make([]*Cache, len(prompts))
			for i := range caches {
				caches[i] = w.NewCache(12)
			}
			got, err := w.PrefillBatch(ctx, caches, prompts, nil)
			if err != nil {
				t.Fatal(err)
			}
			V := cfg.VocabSize
			for i, pr := range prompts {
				c := w.NewCache(12)
				want, err := w.Prefill(ctx, c, pr, nil)
				if err != nil {
					t.Fatal(err)
				}
				if caches[i].Len != len(pr) {
					t.Fatalf("prompt %d: cache length %d, want %d", i, caches[i].Len, len(pr))
				}
				closeAll(t, fmt.Sprintf("prompt %d logits", i), got[i*V:(i+1)*V], want)
				for l := range c.K {
					closeAll(t, fmt.Sprintf("prompt %d layer %d keys", i, l), caches[i].K[l], c.K[l])
					closeAll(t, fmt.Sprintf("prompt %d layer %d values", i, l), caches[i].V[l], c.V[l])
				}
			}
			if _, err := w.PrefillBatch(ctx, caches, prompts, nil); !errors.Is(err, ErrInput) {
				t.Fatalf("prefill into filled caches: %v, want ErrInput", err)
			}
		})
	}
}

// closeAll fails unless got and want have the same length and agree to 1e-5 relative (to the larger of the
// value and 1).
func closeAll(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for j := range want {
		tol := 1e-5 * max(1, math.Abs(float64(want[j])))
		if math.Abs(float64(got[j]-want[j])) > tol {
			t.Fatalf("%s[%d]: batched %g alone %g", what, j, got[j], want[j])
		}
	}
}

// TestExtendInChunks: prompts prefilled a chunk at a time into caches that already hold positions (two
// sequences with different chunk lengths, one on an adapter) end with the caches and last-position logits
// of prefilling each whole, and decoding continues from them as from those.
func TestExtendInChunks(t *testing.T) {
	for name, cfg := range archConfigs() {
		t.Run(name, func(t *testing.T) {
			w := randomModel(t, cfg, 13)
			all := [NumModules]bool{true, true, true, true, true, true, true}
			lora, _ := NewLoRA(cfg, 2, 4, 0, all, 14)
			for _, ts := range lora.Tensors(cfg) {
				for i := range ts.Data {
					ts.Data[i] = float32(math.Cos(float64(i))) * 0.2
				}
			}
			ctx := context.Background()
			prompts := [][]int{{3, 1, 4, 1, 5, 9, 2, 6, 5}, {2, 7, 1, 8, 2, 8, 1}}
			loras := []*LoRA{nil, lora}
			chunked := []*Cache{w.NewCache(16), w.NewCache(16)}
			cuts := [][]int{{0, 1, 5, 9}, {0, 4, 6, 7}} // chunk boundaries of each prompt
			var got []float32
			for step := 0; step < 3; step++ {
				chunks := [][]int{prompts[0][cuts[0][step]:cuts[0][step+1]], prompts[1][cuts[1][step]:cuts[1][step+1]]}
				var err error
				if got, err = w.ExtendAdapters(ctx, chunked, chunks, loras, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			V := cfg.VocabSize
			for i, pr := range prompts {
				whole := w.NewCache(16)
				want, err := w.Prefill(ctx, whole, pr, loras[i])
				if err != nil {
					t.Fatal(err)
				}
				closeAll(t, fmt.Sprintf("prompt %d logits", i), got[i*V:(i+1)*V], want)
				if chunked[i].Len != len(pr) {
					t.Fatalf("prompt %d: cache length %d, want %d", i, chunked[i].Len, len(pr))
				}
				for l := range whole.K {
					closeAll(t, fmt.Sprintf("prompt %d layer %d keys", i, l), chunked[i].K[l], whole.K[l])
					closeAll(t, fmt.Sprintf("prompt %d layer %d values", i, l), chunked[i].V[l], whole.V[l])
				}
				next, err := w.Decode(ctx, []*Cache{chunked[i]}, []int{7}, loras[i])
				if err != nil {
					t.Fatal(err)
				}
				wantNext, _ := w.Decode(ctx, []*Cache{whole}, []int{7}, loras[i])
				closeAll(t, fmt.Sprintf("prompt %d next logits", i), next, wantNext)
			}
			if _, err := w.ExtendAdapters(ctx, chunked, [][]int{{1}, {}}, loras, nil, nil); !errors.Is(err, ErrInput) {
				t.Fatalf("an empty chunk: %v, want ErrInput", err)
			}
		})
	}
}

// TestSharedPrefix checks that caches sharing their first positions with another (SharePrefix, Clone) decode
// and extend exactly as caches holding their own copies: a whole prompt shared, a start of it shared and the
// rest extended as a chunk, a share of a share (which reads the first cache), and a window layer (Gemma 3)
// whose window starts inside the shared run. Three of the four caches share the whole prompt: their
// decoding rows are attended together (attendShared), the fourth alone.
func TestSharedPrefix(t *testing.T) {
	for name, cfg := range archConfigs() {
		t.Run(name, func(t *testing.T) {
			w := randomModel(t, cfg, 17)
			ctx := context.Background()
			prompt := []int{3, 1, 4, 1, 5, 9, 2, 6, 5}
			leader := w.NewCache(24)
			if _, err := w.Prefill(ctx, leader, prompt, nil); err != nil {
				t.Fatal(err)
			}
			whole := leader.Clone()
			part := w.NewCache(24)
			part.SharePrefix(leader, 4)
			if _, err := w.ExtendAdapters(ctx, []*Cache{part}, [][]int{prompt[4:]}, []*LoRA{nil}, nil, nil); err != nil {
				t.Fatal(err)
			}
			again := whole.Clone() // shares the leader's positions, not whole's
			if whole.Shared() != len(prompt) || part.Shared() != 4 || again.Shared() != len(prompt) || again.base != leader {
				t.Fatalf("shared %d, %d, %d positions", whole.Shared(), part.Shared(), again.Shared())
			}
			shared := []*Cache{whole, part, again, whole.Clone()}
			own := make([]*Cache, len(shared)) // the same prompt, prefilled into each cache
			for i := range own {
				own[i] = w.NewCache(24)
				if _, err := w.Prefill(ctx, own[i], prompt, nil); err != nil {
					t.Fatal(err)
				}
			}
			before := slices.Clone(leader.K[0])
			decodeAlike(t, w, shared, own, 7, func(step int) []int { // the tiny models' context is 16
				return []int{step, 2 * step, 3*step + 1, 5}
			})
			if !slices.Equal(before, leader.K[0]) {
				t.Fatal("decoding the sharing caches changed the shared positions")
			}
			flat := part.Compact()
			if flat.Shared() != 0 || flat.Len != part.Len {
				t.Fatalf("Compact: %d shared of %d", flat.Shared(), flat.Len)
			}
			for l := range flat.K {
				closeAll(t, fmt.Sprintf("layer %d compact keys", l), flat.K[l], own[1].Compact().K[l])
			}
		})
	}
}

// TestRebase: a cache that shared a start with another and extended the rest itself (a prompt that began
// like a kept one) reads all its positions from its compact copy once rebased on it, so a clone shares the
// whole prompt (no copy) from that copy; both then decode as caches holding their own prompts.
func TestRebase(t *testing.T) {
	w := randomModel(t, tinyConfig(), 19)
	ctx := context.Background()
	prompt := []int{3, 1, 4, 1, 5, 9, 2, 6, 5}
	leader := w.NewCache(24)
	if _, err := w.Prefill(ctx, leader, prompt, nil); err != nil {
		t.Fatal(err)
	}
	part := w.NewCache(24)
	part.SharePrefix(leader, 4)
	if _, err := w.ExtendAdapters(ctx, []*Cache{part}, [][]int{prompt[4:]}, []*LoRA{nil}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if c := part.Clone(); c.Shared() != 0 {
		t.Fatalf("a clone of a cache reading from two places shared %d positions, want a copy", c.Shared())
	}
	kept := part.Compact()
	part.Rebase(kept)
	clone := part.Clone()
	if part.Shared() != len(prompt) || clone.Shared() != len(prompt) || clone.base != kept {
		t.Fatalf("after Rebase: %d and %d positions shared", part.Shared(), clone.Shared())
	}
	own := []*Cache{w.NewCache(24), w.NewCache(24)}
	for _, c := range own {
		if _, err := w.Prefill(ctx, c, prompt, nil); err != nil {
			t.Fatal(err)
		}
	}
	decodeAlike(t, w, []*Cache{part, clone}, own, 5, func(step int) []int { return []int{step, 2*step + 1} })
}

// decodeAlike decodes steps tokens (toks(step), one per cache) into caches got and into caches want, which
// hold the same positions, and checks that every step's logits agree.
func decodeAlike(t *testing.T, w *Weights, got, want []*Cache, steps int, toks func(step int) []int) {
	t.Helper()
	for step := range steps {
		g, err := w.Decode(context.Background(), got, toks(step), nil)
		if err != nil {
			t.Fatal(err)
		}
		x, err := w.Decode(context.Background(), want, toks(step), nil)
		if err != nil {
			t.Fatal(err)
		}
		closeAll(t, fmt.Sprintf("step %d logits", step), g, x)
	}
}

// TestDecodeWideHeads holds decoding at real head sizes (64 and 128, the AVX2 kernels' whole vectors) and a
// shared prompt longer than one chunk of the decoding attention (attendChunk) and not a whole number of its
// blocks of 8 keys, to the full forward pass: three caches sharing the prompt (attended together,
// attendShared) and one holding its own (alone), each decoding its own tokens.
func TestDecodeWideHeads(t *testing.T) {
	for _, hd := range []int{64, 128} {
		t.Run(fmt.Sprint(hd), func(t *testing.T) {
			cfg := tinyConfig()
			cfg.HeadDim, cfg.Heads, cfg.KVHeads, cfg.Layers, cfg.MaxSeqLen = hd, 6, 2, 1, 160
			w := randomModel(t, cfg, 9)
			for _, ly := range w.Layers { // scores of order one at this head size
				for i := range ly.W[ModK].F32 {
					ly.W[ModK].F32[i] *= 0.1
				}
			}
			ctx := context.Background()
			prompt := make([]int, 101)
			for i := range prompt {
				prompt[i] = (i*7 + 3) % cfg.VocabSize
			}
			leader := w.NewCache(128)
			if _, err := w.Prefill(ctx, leader, prompt, nil); err != nil {
				t.Fatal(err)
			}
			own := w.NewCache(128)
			if _, err := w.Prefill(ctx, own, prompt, nil); err != nil {
				t.Fatal(err)
			}
			caches := []*Cache{leader.Clone(), leader.Clone(), leader.Clone(), own}
			seqs := make([][]int, len(caches))
			for s := range seqs {
				seqs[s] = slices.Clone(prompt)
			}
			for step := range 10 {
				toks := make([]int, len(caches))
				for s := range toks {
					toks[s] = (step*5 + s*3 + 1) % cfg.VocabSize
					seqs[s] = append(seqs[s], toks[s])
				}
				got, err := w.Decode(ctx, caches, toks, nil)
				if err != nil {
					t.Fatal(err)
				}
				for s, seq := range seqs {
					p, err := w.Forward(ctx, [][]int{seq}, PassOptions{})
					if err != nil {
						t.Fatal(err)
					}
					closeAll(t, fmt.Sprintf("step %d sequence %d", step, s), got[s*cfg.VocabSize:(s+1)*cfg.VocabSize], p.Logits([]int{len(seq) - 1}))
				}
			}
		})
	}
}
