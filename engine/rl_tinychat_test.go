package engine

import (
	"context"
	"strings"
	"testing"
)

// TestRLArithmeticOnTinyChat is the RL demo in miniature on the built-in model: a few CISPO steps on a
// fixed set of single-digit questions with an exact-answer reward raise the accuracy of fresh samples.
func TestRLArithmeticOnTinyChat(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the built-in model for a few steps")
	}
	b, err := OpenBuiltin("trainyard/tiny-chat")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	questions := [][2]string{{"What is 3+4?", "7"}, {"What is 6+2?", "8"}, {"What is 9-5?", "4"}, {"What is 2*3?", "6"}}
	a, _ := b.NewAdapter(DefaultLoRAConfig(), 1)
	tr := NewTrainer(b, a, nil)
	sample := func(q string, n int, seed int64) []Completion {
		p, _ := b.RenderPrompt([]Message{{Role: "user", Content: q}}, nil)
		out, err := b.Sample(ctx, a, p, SampleParams{Temperature: 1, MaxTokens: 6, N: n, Seed: seed}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	accuracy := func() float64 {
		ok := 0
		for i, q := range questions {
			for _, c := range sample(q[0], 50, int64(9000+i)) {
				if strings.TrimSpace(c.Text) == q[1] {
					ok++
				}
			}
		}
		return float64(ok) / float64(50*len(questions))
	}
	before := accuracy()
	opt := DefaultAdamWConfig()
	opt.LearningRate = 1e-3
	for step := 0; step < 5; step++ {
		var rewards [][]float64
		var seqs []Sequence
		for i, q := range questions {
			var rs []float64
			for _, c := range sample(q[0], 16, int64(step*100+i)) {
				r := 0.0
				if strings.TrimSpace(c.Text) == q[1] {
					r = 1
				}
				ids, lps := make([]int, len(c.Tokens)), make([]float32, len(c.Tokens))
				for k, tk := range c.Tokens {
					ids[k], lps[k] = tk.ID, tk.Logprob
				}
				s, err := b.RenderTraining([]Message{{Role: "user", Content: q[0]},
					{Role: "assistant", Tokens: ids, Logprobs: lps, Trainable: true}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				rs, seqs = append(rs, r), append(seqs, s)
			}
			rewards = append(rewards, rs)
		}
		var batch []RLSample
		for g, adv := range Advantages(rewards, true, 0) {
			for i, v := range adv {
				batch = append(batch, RLSample{Sequence: seqs[g*16+i], Advantage: float32(v)})
			}
		}
		if _, err := tr.RLStep(ctx, batch, RLConfig{}, opt); err != nil {
			t.Fatal(err)
		}
	}
	after := accuracy()
	t.Logf("accuracy on fresh samples: %.2f -> %.2f", before, after)
	if after < before+0.15 {
		t.Fatalf("accuracy %.2f -> %.2f, want at least +0.15", before, after)
	}
}
