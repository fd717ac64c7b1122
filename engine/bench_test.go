package engine

import (
	"context"
	"math/rand"
	"runtime"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
)

func builtin(b *testing.B) *Base {
	base, err := OpenBuiltin("trainyard/tiny-chat")
	if err != nil {
		b.Skip(err)
	}
	return base
}

// BenchmarkDecode measures cached single-token forward passes (the sampling inner loop) at batch 1 and 8,
// reporting generated tokens per second.
func BenchmarkDecode(b *testing.B) {
	base := builtin(b)
	ctx := context.Background()
	prompt := make([]int, 32)
	for i := range prompt {
		prompt[i] = 'a' + i%26
	}
	for _, batch := range []int{1, 8} {
		b.Run(map[int]string{1: "batch1", 8: "batch8"}[batch], func(b *testing.B) {
			const steps = 64
			tokens := 0
			for i := 0; i < b.N; i++ {
				caches := make([]*model.Cache, batch)
				ids := make([]int, batch)
				for j := range caches {
					caches[j] = base.w.NewCache(len(prompt) + steps)
					if _, err := base.w.Prefill(ctx, caches[j], prompt, nil); err != nil {
						b.Fatal(err)
					}
					ids[j] = 'x'
				}
				b.StartTimer()
				for s := 0; s < steps; s++ {
					if _, err := base.w.Decode(ctx, caches, ids, nil); err != nil {
						b.Fatal(err)
					}
					tokens += batch
				}
				b.StopTimer()
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkSample measures end-to-end Sample (prefill, batched decode, softmax, top-p sampling, logprobs)
// with n=8 completions of up to 64 tokens, with a LoRA adapter attached.
func BenchmarkSample(b *testing.B) {
	base := builtin(b)
	a, _ := base.NewAdapter(DefaultLoRAConfig(), 1)
	prompt, _ := base.RenderPrompt([]Message{{Role: "user", Content: "Tell me a fortune."}}, nil)
	tokens := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := base.Sample(context.Background(), a, prompt, SampleParams{Temperature: 1, TopP: 0.95, N: 8, MaxTokens: 64, Seed: int64(i), TopLogprobs: 5}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range out {
			tokens += len(c.Tokens)
		}
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkRLStep measures one RL optimizer step (forward, backward through the frozen base into the
// LoRA adapter on all seven projections, AdamW) on an RL-sized batch: 32 sequences × 128 tokens, the last
// 96 of each trainable. It reports training tokens/s, the achieved GFLOP/s of the matrix products the
// step issues (their flop count over the whole step's wall time) and the heap high-water mark.
func BenchmarkRLStep(b *testing.B) {
	base := builtin(b)
	a, _ := base.NewAdapter(DefaultLoRAConfig(), 1)
	tr := NewTrainer(base, a, nil)
	rng := rand.New(rand.NewSource(1))
	var batch []RLSample
	for s := 0; s < 32; s++ {
		seq := Sequence{Tokens: make([]int, 128), Trainable: make([]bool, 128), OldLogprobs: make([]float32, 128)}
		for i := range seq.Tokens {
			seq.Tokens[i] = 32 + rng.Intn(90)
			seq.Trainable[i] = i >= 32
			seq.OldLogprobs[i] = -4.5
		}
		batch = append(batch, RLSample{Sequence: seq, Advantage: float32(rng.NormFloat64())})
	}
	opt := DefaultAdamWConfig()
	var gflops, tps float64
	var peak uint64
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := tr.RLStep(context.Background(), batch, RLConfig{}, opt)
		if err != nil {
			b.Fatal(err)
		}
		gflops += st["matmul_gflops"]
		tps += st["tokens_per_second"]
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	b.ReportMetric(tps/float64(b.N), "tokens/s")
	b.ReportMetric(gflops/float64(b.N), "GFLOP/s")
	b.ReportMetric(float64(peak)/(1<<20), "heapMB")
}
