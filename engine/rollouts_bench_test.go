package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// smolLM2Qwen3Vocab is SmolLM2-135M's body with Qwen3's 151,936-token vocabulary: the shape RL rollouts
// were measured at (the head is then the largest matrix).
const smolLM2Qwen3Vocab = `{"model_type":"llama","vocab_size":151936,"hidden_size":576,"intermediate_size":1536,
"num_hidden_layers":30,"num_attention_heads":9,"num_key_value_heads":3,"max_position_embeddings":8192,
"rope_theta":100000,"rms_norm_eps":1e-5,"tie_word_embeddings":true}`

// BenchmarkRollouts samples an RL iteration's rollouts through one Sampler as chat serves them: G groups of
// N requests (n=1 each, sent at once), each group's requests on the same prompt of 98 tokens whose first
// systemTokens are the same for every group and iteration (a system prompt, as ART's rollouts share theirs:
// from the second iteration on a group's prompt starts like one the prompt cache keeps), 128 tokens each at
// temperature 1 with logprobs, on a random-weight base of SmolLM2-135M's body with Qwen3's vocabulary. It
// reports generated tokens/s (prefill, sampling and decoding). In "one-adapter" every group samples from the
// same LoRA adapter of the base; in "adapters" each group from its own (a model's last checkpoints, or
// several models): the batch still reads the base weights once per step.
//
//	go test -run '^$' -bench Rollouts -benchtime 1x ./engine/
func BenchmarkRollouts(b *testing.B) {
	const systemTokens = 48
	base, err := NewRandomBase("bench", []byte(smolLM2Qwen3Vocab), 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, shape := range []struct {
		groups, n int
		adapters  int // 0: the base alone; 1: every group on one adapter; more: each group on its own
	}{{4, 8, 0}, {4, 8, 1}, {4, 8, 4}} {
		samplers := make([]*Sampler, shape.groups)
		var one *Adapter
		for g := range samplers {
			var a *Adapter
			switch {
			case shape.adapters == 1 && one != nil:
				a = one
			case shape.adapters > 0:
				if a, err = base.NewAdapter(DefaultLoRAConfig(), int64(g+1)); err != nil {
					b.Fatal(err)
				}
				one = a
			}
			if samplers[g], err = base.NewSampler(a); err != nil {
				b.Fatal(err)
			}
		}
		name := fmt.Sprintf("%dx%d", shape.groups, shape.n)
		switch shape.adapters {
		case 1:
			name += "/one-adapter"
		case 4:
			name += "/adapters"
		}
		b.Run(name, func(b *testing.B) {
			tokens := 0
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for g := range shape.groups {
					prompt := make([]int, 98)
					for j := range prompt {
						prompt[j] = (i*7919 + g*131 + j*17) % 256
						if j < systemTokens { // the system prompt every group starts with
							prompt[j] = (j*37 + 11) % 256
						}
					}
					for r := range shape.n {
						wg.Go(func() {
							out, err := samplers[g].Sample(context.Background(), prompt, SampleParams{Temperature: 1, MaxTokens: 128,
								N: 1, Seed: int64(g*shape.n + r), Constraint: nil}, nil)
							if err != nil {
								b.Error(err)
								return
							}
							mu.Lock()
							tokens += len(out[0].Tokens)
							mu.Unlock()
						})
					}
				}
				wg.Wait()
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
