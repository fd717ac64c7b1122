package model

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
)

// smolLM2 is SmolLM2-135M's shape.
var smolLM2 = Config{VocabSize: 49152, Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, HeadDim: 64, Hidden: 1536,
	MaxSeqLen: 2048, RopeTheta: 100000, NormEps: 1e-5, TiedEmbeddings: true, Arch: "llama"}

// BenchmarkBaseDType compares a float32 and a bfloat16 base at SmolLM2-135M's shape: the memory the weights
// take, decoding at batch 1 (the matrices streamed once per token) and 8 (few-row products) and a 128-token
// prefill and a LoRA forward+backward over 4 × 128 tokens (the packed paths).
//
//	go test -run XXX -bench BaseDType -benchtime 20x ./engine/model/
func BenchmarkBaseDType(b *testing.B) {
	w32, err := NewWeights(smolLM2)
	if err != nil {
		b.Fatal(err)
	}
	w32.Init(1)
	packed := w32.ToBF16()
	packed.Pack() // as snapshots are held
	bases := []struct {
		name string
		w    *Weights
	}{{string(F32), w32}, {string(BF16), w32.ToBF16()}, {"packed", packed}}
	prompt := make([]int, 128)
	rng := rand.New(rand.NewSource(1))
	for i := range prompt {
		prompt[i] = rng.Intn(smolLM2.VocabSize)
	}
	ctx := context.Background()
	for _, base := range bases {
		w, dt := base.w, base.name
		b.Run(fmt.Sprintf("decode/%s", dt), func(b *testing.B) {
			c := w.NewCache(2048)
			if _, err := w.Prefill(ctx, c, prompt[:8], nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.Len == c.cap {
					b.StopTimer()
					c = w.NewCache(2048)
					_, _ = w.Prefill(ctx, c, prompt[:8], nil)
					b.StartTimer()
				}
				if _, err := w.Decode(ctx, []*Cache{c}, []int{prompt[i%128]}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(w.Bytes())/1e6, "base-MB")
		})
		b.Run(fmt.Sprintf("decode8/%s", dt), func(b *testing.B) {
			caches := make([]*Cache, 8)
			toks := make([]int, 8)
			for i := range caches {
				caches[i] = w.NewCache(2048)
				if _, err := w.Prefill(ctx, caches[i], prompt[i:i+8], nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range toks {
					toks[j] = prompt[(i+j)%128]
				}
				if _, err := w.Decode(ctx, caches, toks, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(8*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
		b.Run(fmt.Sprintf("lora-step4x128/%s", dt), func(b *testing.B) {
			all := [NumModules]bool{true, true, true, true, true, true, true}
			lora, _ := NewLoRA(smolLM2, 8, 16, 0, all, 1)
			grads := lora.ZeroLike()
			seqs := [][]int{prompt, prompt, prompt, prompt}
			rows := make([]int, 4*96) // the last 96 positions of each sequence are trained
			for i := range rows {
				rows[i] = (i/96)*128 + 32 + i%96
			}
			dl := make([]float32, len(rows)*smolLM2.VocabSize)
			for i := range dl {
				dl[i] = float32(rng.NormFloat64()) * 1e-4
			}
			arena := &Arena{}
			cpu := processCPU()
			for i := 0; i < b.N; i++ {
				arena.Reset()
				p, err := w.Forward(ctx, seqs, PassOptions{LoRA: lora, Keep: true, Arena: arena})
				if err != nil {
					b.Fatal(err)
				}
				p.Logits(rows)
				if err := p.Backward(ctx, rows, dl, Grads{L: grads}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(4*128*b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(4*128*b.N)/(processCPU()-cpu).Seconds(), "tokens/cpu-s")
		})
		b.Run(fmt.Sprintf("prefill128/%s", dt), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := w.Prefill(ctx, w.NewCache(128), prompt, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(128*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkPrefillBatch measures prefilling 8 prompts of 16 and of 128 tokens at SmolLM2-135M's shape
// (float32) one after another, concurrently on 8 goroutines (how concurrent requests prefilled before the
// sampler's batcher grouped them) and together in one PrefillBatch pass. Batching saves reading the weights
// once per prompt, which matters most for short prompts: at 128 rows the matrix products are already
// compute-bound.
//
//	go test -run XXX -bench PrefillBatch -benchtime 5x ./engine/model/
func BenchmarkPrefillBatch(b *testing.B) {
	w, err := NewWeights(smolLM2)
	if err != nil {
		b.Fatal(err)
	}
	w.Init(1)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	const n = 8
	for _, T := range []int{16, 128} {
		prompts := make([][]int, n)
		for i := range prompts {
			prompts[i] = make([]int, T)
			for j := range prompts[i] {
				prompts[i][j] = rng.Intn(smolLM2.VocabSize)
			}
		}
		caches := func() []*Cache {
			cs := make([]*Cache, n)
			for i := range cs {
				cs[i] = w.NewCache(T)
			}
			return cs
		}
		b.Run(fmt.Sprintf("%dx%d/sequential", n, T), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for j, c := range caches() {
					if _, err := w.Prefill(ctx, c, prompts[j], nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n*T*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
		b.Run(fmt.Sprintf("%dx%d/goroutines", n, T), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				errs := make(chan error, n)
				for j, c := range caches() {
					go func() {
						_, err := w.Prefill(ctx, c, prompts[j], nil)
						errs <- err
					}()
				}
				for range n {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n*T*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
		b.Run(fmt.Sprintf("%dx%d/batched", n, T), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := w.PrefillBatch(ctx, caches(), prompts, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*T*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkAttention is one layer's attention forward and backward in a training step at SmolLM2-135M's
// shape, 32 sequences of 128 tokens: the products, the softmax and its gradient, the heads' stacking.
//
//	go test -run XXX -bench 'Attention$' -count 6 ./engine/model/
func BenchmarkAttention(b *testing.B) {
	cfg := smolLM2
	cfg.Layers, cfg.VocabSize = 1, 512
	w, err := NewWeights(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w.Init(2)
	seqs := make([][]int, 32)
	rng := rand.New(rand.NewSource(1))
	for s := range seqs {
		for range 128 {
			seqs[s] = append(seqs[s], rng.Intn(cfg.VocabSize))
		}
	}
	// An arena, as a training step's passes have: the weights of every iteration's forward are carved from
	// where the first iteration's were, instead of 19 MB of fresh memory faulted in and zeroed each time.
	ar := &Arena{}
	p, err := w.Forward(context.Background(), seqs, PassOptions{Keep: true, Arena: ar})
	if err != nil {
		b.Fatal(err)
	}
	cur, off, used := ar.cur, ar.off, ar.used
	lc := p.layers[0]
	datt := make([]float32, p.N*cfg.QDim())
	for i := range datt {
		datt[i] = float32(rng.NormFloat64()) * 0.01
	}
	dq, dk, dv := make([]float32, p.N*cfg.QDim()), make([]float32, p.N*cfg.KVDim()), make([]float32, p.N*cfg.KVDim())
	for b.Loop() {
		ar.cur, ar.off, ar.used = cur, off, used
		p.attention(0, lc)
		clear(dk)
		clear(dv)
		p.attentionBack(0, lc, datt, dq, dk, dv)
	}
}

// BenchmarkForwardRounded is a training micro-batch's forward pass at SmolLM2-135M's shape (10 sequences of
// 128 tokens, the pass of a 1.125 GiB activation budget) on a base in the pair layout, its rows rounded to
// bfloat16 by each product ("products") or once by the norms that write them ("norms", Pass.rounded).
//
//	go test -run XXX -bench ForwardRounded -count 6 ./engine/model/
func BenchmarkForwardRounded(b *testing.B) {
	cfg := smolLM2
	cfg.VocabSize = 4096
	w := roundedAheadBase(b, cfg, 1)
	seqs := make([][]int, 10)
	for s := range seqs {
		for i := range 128 {
			seqs[s] = append(seqs[s], (s*977+i*131)%cfg.VocabSize)
		}
	}
	for _, ahead := range []bool{false, true} {
		name := "products"
		if ahead {
			name = "norms"
		}
		b.Run(name, func(b *testing.B) {
			defer func(was bool) { roundAhead = was }(roundAhead)
			roundAhead = ahead
			var ar Arena
			for b.Loop() {
				ar.Reset()
				if _, err := w.Forward(context.Background(), seqs, PassOptions{Keep: true, Arena: &ar}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
