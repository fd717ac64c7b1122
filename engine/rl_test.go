package engine

import (
	"context"
	"math"
	"testing"
)

// lowerReward is the toy programmatic reward: the fraction of completion bytes that are lowercase letters.
func lowerReward(c Completion) float64 {
	if len(c.Tokens) == 0 {
		return 0
	}
	n := 0
	for _, t := range c.Tokens {
		if len(t.Bytes) == 1 && t.Bytes[0] >= 'a' && t.Bytes[0] <= 'z' {
			n++
		}
	}
	return float64(n) / float64(len(c.Tokens))
}

var rlPrompts = []string{"Write something.", "Go on.", "Say more.", "Continue."}

// rollout samples a group per prompt and returns the RL samples and the mean reward.
func rollout(t *testing.T, b *Base, a *Adapter, seed int64, group int) ([]RLSample, float64) {
	ctx := context.Background()
	var rewards [][]float64
	var seqs [][]Sequence
	var total float64
	for i, p := range rlPrompts {
		msgs := []Message{{Role: "user", Content: p}}
		prompt, err := b.RenderPrompt(msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := b.Sample(ctx, a, prompt, SampleParams{Temperature: 1, MaxTokens: 8, N: group, Seed: seed + int64(i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var rs []float64
		var ss []Sequence
		for _, c := range outs {
			r := lowerReward(c)
			rs, total = append(rs, r), total+r
			ids, lps := make([]int, len(c.Tokens)), make([]float32, len(c.Tokens))
			for k, tk := range c.Tokens {
				ids[k], lps[k] = tk.ID, tk.Logprob
			}
			s, err := b.RenderTraining(append(msgs, Message{Role: "assistant", Tokens: ids, Logprobs: lps, Trainable: true}), nil)
			if err != nil {
				t.Fatal(err)
			}
			ss = append(ss, s)
		}
		rewards, seqs = append(rewards, rs), append(seqs, ss)
	}
	adv := Advantages(rewards, true, 0)
	var batch []RLSample
	for g := range seqs {
		for i, s := range seqs[g] {
			batch = append(batch, RLSample{Sequence: s, Advantage: float32(adv[g][i])})
		}
	}
	return batch, total / float64(len(rlPrompts)*group)
}

// TestRLRaisesReward: a few RL steps raise the mean reward of fresh samples, only LoRA changes.
func TestRLRaisesReward(t *testing.T) {
	for _, cfg := range []RLConfig{{LossFn: "cispo"}, {LossFn: "ppo", ImportanceSamplingLevel: "sequence", KLPenaltyCoef: 0.01}} {
		b := tinyBase(t, 7)
		before := baseBits(b)
		a, _ := b.NewAdapter(DefaultLoRAConfig(), 1)
		tr := NewTrainer(b, a, nil)
		opt := DefaultAdamWConfig()
		opt.LearningRate = 1e-2
		_, base := rollout(t, b, a, 1000, 16)
		for step := 0; step < 15; step++ {
			batch, mean := rollout(t, b, a, int64(step*100), 8)
			t.Logf("step %d reward %.3f", step, mean)
			st, err := tr.RLStep(context.Background(), batch, cfg, opt)
			if err != nil {
				t.Fatal(err)
			}
			if math.IsNaN(st["loss"]) {
				t.Fatal("nan loss")
			}
		}
		_, after := rollout(t, b, a, 1000, 16)
		t.Logf("%s: mean reward %.3f -> %.3f", cfg.LossFn, base, after)
		if after < base+0.2 {
			t.Errorf("%s: mean reward %.3f -> %.3f, want +0.2", cfg.LossFn, base, after)
		}
		if !equalBits(before, baseBits(b)) {
			t.Fatal("base weights changed")
		}
	}
}
