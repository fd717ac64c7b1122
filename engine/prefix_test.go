package engine

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
)

// groupedRLBatch returns groups × n rollouts: each group one prompt (a system prompt of 18 random tokens
// that every group shares, then 20–40 of its own, all untrainable) and each rollout its own completion of
// 5–30 (trainable, old logprobs, some unknown), with random advantages, the groups' rollouts interleaved
// (the first of every group, then the second, ...); then one sequence of its own.
func groupedRLBatch(groups, n, vocab int, seed int64) []RLSample {
	rng := rand.New(rand.NewSource(seed))
	sample := func(prompt []int) RLSample {
		T := len(prompt) + 5 + rng.Intn(26)
		seq := Sequence{Tokens: append(append([]int(nil), prompt...), make([]int, T-len(prompt))...),
			Trainable: make([]bool, T), OldLogprobs: make([]float32, T)}
		for i := len(prompt); i < T; i++ {
			seq.Tokens[i] = rng.Intn(vocab)
			seq.Trainable[i] = true
			seq.OldLogprobs[i] = float32(-5.3 - 0.6*rng.Float64())
			if rng.Intn(7) == 0 {
				seq.OldLogprobs[i] = float32(math.NaN())
			}
		}
		return RLSample{Sequence: seq, Advantage: float32(rng.NormFloat64())}
	}
	tokens := func(n int) []int {
		p := make([]int, n)
		for i := range p {
			p[i] = rng.Intn(vocab)
		}
		return p
	}
	system := tokens(18)
	prompts := make([][]int, groups)
	for g := range prompts {
		prompts[g] = append(append([]int(nil), system...), tokens(20+rng.Intn(21))...)
	}
	var batch []RLSample
	for i := 0; i < n; i++ {
		for g := range prompts {
			batch = append(batch, sample(prompts[g]))
		}
	}
	return append(batch, sample(tokens(30)))
}

// TestSharedPrompts: RL and SFT steps over groups of rollouts of one prompt each train the prompt once
// per group and micro-batch (microBatches) — each group's own prompt, not just the system prompt all share,
// though the rollouts come interleaved — and give the loss, metrics, gradients and updated adapter of the
// same steps with every sequence passed whole; also when micro-batches split the groups (one rollout each,
// or a group across two), and when a pass has room for one group only (each group then gets a pass of its
// own rather than being split across two with its prompt passed twice).
func TestSharedPrompts(t *testing.T) {
	ctx := context.Background()
	b := tinyBase(t, 11)
	batch := groupedRLBatch(3, 4, b.VocabSize(), 7)
	seqs := make([]Sequence, len(batch))
	tokens := 0
	for i, s := range batch {
		seqs[i] = s.Sequence
		tokens += len(s.Tokens)
	}
	// passed counts the tokens of a trainer's passes over seqs, the passes and the shared prefixes in them.
	passed := func(tr *Trainer) (n, passes, prefixes int) {
		mbs := tr.microBatches(seqs, !tr.noShare)
		for _, mb := range mbs {
			for _, ps := range mb {
				n += len(ps.toks)
				if ps.si < 0 {
					prefixes++
				}
			}
		}
		return n, len(mbs), prefixes
	}
	// Each group's prompt but its last token (whose row predicts the first completion token) is shared:
	// rollouts g, g+3, g+6, g+9 are group g's.
	shared := tokens
	for g := 0; g < 3; g++ {
		shared -= 3 * shareable(seqs[g])
	}
	l, n0 := b.w.Cfg, shareable(seqs[0])
	bytes := func(T, P int) int64 {
		lr := liveTrainer(t, b).adapter.lora
		return model.TrainSeqBytes(l, lr.Rank, lr.Targets, lr.Dropout > 0, T, P)
	}
	// Room for the first group's prompt and two of its rollouts.
	groupSplit := bytes(n0, 0) + bytes(len(seqs[0].Tokens)-n0, n0) + bytes(len(seqs[3].Tokens)-n0, n0)
	// Room for the largest group, prompt and rollouts, but not for two.
	var groupWhole int64
	for g := 0; g < 3; g++ {
		ng := shareable(seqs[g])
		need := bytes(ng, 0)
		for r := g; r < 12; r += 3 {
			need += bytes(len(seqs[r].Tokens)-ng, ng)
		}
		groupWhole = max(groupWhole, need)
	}
	for name, step := range stepKinds(ctx, batch) {
		t.Run(name, func(t *testing.T) {
			whole := liveTrainer(t, b)
			whole.noShare = true
			wst, err := step(whole)
			if err != nil {
				t.Fatal(err)
			}
			if wst["loss"] == 0 || wst["grad_norm"] == 0 {
				t.Fatalf("degenerate step: %v", wst)
			}
			for _, split := range []string{"one pass", "one rollout a pass", "a group across passes", "a group a pass"} {
				tr := liveTrainer(t, b)
				switch split {
				case "one rollout a pass":
					tr.SetActivationBudget(1)
				case "a group across passes":
					tr.SetActivationBudget(groupSplit)
				case "a group a pass":
					tr.SetActivationBudget(groupWhole)
				}
				n, passes, prefixes := passed(tr)
				switch split {
				case "one pass":
					if passes != 1 || prefixes != 3 || n != shared {
						t.Fatalf("%s: %d passes of %d tokens, %d prefixes; want 1 of %d (the batch has %d), 3", split, passes, n, prefixes, shared, tokens)
					}
				case "one rollout a pass":
					if passes != len(seqs) || prefixes != 12 || n != tokens {
						t.Fatalf("%s: %d passes of %d tokens, %d prefixes; want %d of %d, 12", split, passes, n, prefixes, len(seqs), tokens)
					}
				case "a group across passes":
					if passes < 2 || prefixes <= 3 {
						t.Fatalf("%s: %d passes, %d prefixes", split, passes, prefixes)
					}
				case "a group a pass": // no group split between two passes, so no prompt passed twice
					if passes < 3 || prefixes != 3 || n != shared {
						t.Fatalf("%s: %d passes of %d tokens, %d prefixes; want 3 or more of %d, 3", split, passes, n, prefixes, shared)
					}
				}
				st, err := step(tr)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"loss", "entropy", "policy_loss", "kl_div", "mean_importance_ratio", "clip_fraction", "grad_norm", "num_tokens", "num_trainable_tokens"} {
					if w, s := wst[k], st[k]; math.Abs(w-s) > 1e-5*math.Max(1, math.Abs(w)) {
						t.Errorf("%s: %s: whole %v, shared %v", split, k, w, s)
					}
				}
				if d := relDiff(adapterParamsOf(whole.grads, whole.adapter.cfg), adapterParamsOf(tr.grads, tr.adapter.cfg)); d > 1e-4 {
					t.Errorf("%s: adapter gradients differ: relative error %.2g", split, d)
				}
				if d := relDiff(adapterParams(whole.adapter), adapterParams(tr.adapter)); d > 1e-4 {
					t.Errorf("%s: updated adapters differ: relative error %.2g", split, d)
				}
			}
		})
	}
}
