package engine

import (
	"context"
	"math"
	"math/rand"
	"testing"
)

// randomRLBatch returns n sequences of 20–60 random tokens, the last two thirds trainable, with old
// logprobs (some unknown) and random advantages.
func randomRLBatch(n, vocab int, seed int64) []RLSample {
	rng := rand.New(rand.NewSource(seed))
	var batch []RLSample
	for s := 0; s < n; s++ {
		T := 20 + rng.Intn(41)
		seq := Sequence{Tokens: make([]int, T), Trainable: make([]bool, T), OldLogprobs: make([]float32, T)}
		for i := range seq.Tokens {
			seq.Tokens[i] = rng.Intn(vocab)
			seq.Trainable[i] = i >= T/3
			seq.OldLogprobs[i] = float32(-5.3 - 0.6*rng.Float64()) // near log(1/264): ratios around 1, some clipped
			if rng.Intn(7) == 0 {
				seq.OldLogprobs[i] = float32(math.NaN())
			}
		}
		batch = append(batch, RLSample{Sequence: seq, Advantage: float32(rng.NormFloat64())})
	}
	return batch
}

// TestMicroBatchesMatchOneBatch: a step split into micro-batches of one sequence, with the head evaluated
// five rows at a time, gives the loss, metrics and adapter gradient of one pass over the whole batch with
// the head in one piece — for SFT, token-level CISPO, and sequence-level PPO with a KL penalty (whose
// gradients need the whole sequence's logprobs first) — and so the same updated adapter.
func TestMicroBatchesMatchOneBatch(t *testing.T) {
	ctx := context.Background()
	b := tinyBase(t, 11)
	batch := randomRLBatch(6, b.VocabSize(), 5)
	seqs := make([]Sequence, len(batch))
	for i, s := range batch {
		seqs[i] = s.Sequence
	}
	for name, step := range stepKinds(ctx, batch) {
		t.Run(name, func(t *testing.T) {
			run := func(split bool) (*Trainer, StepStats) {
				tr := liveTrainer(t, b)
				if split {
					tr.SetActivationBudget(1)
					tr.headRows = 5
					if n := len(tr.microBatches(seqs, true)); n != len(seqs) {
						t.Fatalf("%d micro-batches, want one per sequence (%d)", n, len(seqs))
					}
				} else if n := len(tr.microBatches(seqs, true)); n != 1 {
					t.Fatalf("%d micro-batches, want 1", n)
				}
				st, err := step(tr)
				if err != nil {
					t.Fatal(err)
				}
				return tr, st
			}
			whole, wst := run(false)
			split, sst := run(true)
			for _, k := range []string{"loss", "entropy", "policy_loss", "kl_div", "mean_importance_ratio", "clip_fraction", "grad_norm"} {
				w, s := wst[k], sst[k]
				if math.Abs(w-s) > 1e-5*math.Max(1, math.Abs(w)) {
					t.Errorf("%s: one batch %v, micro-batches %v", k, w, s)
				}
			}
			if wst["loss"] == 0 || wst["grad_norm"] == 0 {
				t.Fatalf("degenerate step: %v", wst)
			}
			gw, gs := adapterParamsOf(whole.grads, whole.adapter.cfg), adapterParamsOf(split.grads, split.adapter.cfg)
			if d := relDiff(gw, gs); d > 1e-4 {
				t.Errorf("adapter gradients differ: relative error %.2g", d)
			}
			if d := relDiff(adapterParams(whole.adapter), adapterParams(split.adapter)); d > 1e-4 {
				t.Errorf("updated adapters differ: relative error %.2g", d)
			}
		})
	}
}

// stepKinds are the steps the micro-batch tests compare over batch: SFT on its sequences, token-level CISPO,
// and sequence-level PPO with a KL penalty (whose gradients need the whole sequence's logprobs first).
func stepKinds(ctx context.Context, batch []RLSample) map[string]func(*Trainer) (StepStats, error) {
	seqs := make([]Sequence, len(batch))
	for i, s := range batch {
		seqs[i] = s.Sequence
	}
	return map[string]func(*Trainer) (StepStats, error){
		"sft": func(tr *Trainer) (StepStats, error) { return tr.SFTStep(ctx, seqs, DefaultAdamWConfig()) },
		"cispo": func(tr *Trainer) (StepStats, error) {
			return tr.RLStep(ctx, batch, RLConfig{}, DefaultAdamWConfig())
		},
		"ppo-sequence-kl": func(tr *Trainer) (StepStats, error) {
			return tr.RLStep(ctx, batch, RLConfig{LossFn: "ppo", ImportanceSamplingLevel: "sequence", KLPenaltyCoef: 0.1}, DefaultAdamWConfig())
		},
	}
}

// liveTrainer returns a trainer of a new adapter of b whose B matrices are not zero, so the adapter is on
// every path.
func liveTrainer(t *testing.T, b *Base) *Trainer {
	a, err := b.NewAdapter(DefaultLoRAConfig(), 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(8))
	for _, p := range a.lora.B {
		for _, m := range p {
			for i := range m {
				m[i] = float32(rng.NormFloat64() * 0.05)
			}
		}
	}
	return NewTrainer(b, a, nil)
}

// relDiff is max |a−b| over max |a| across all tensors.
func relDiff(a, b [][]float32) float64 {
	var d, m float64
	for i := range a {
		for j := range a[i] {
			d = math.Max(d, math.Abs(float64(a[i][j]-b[i][j])))
			m = math.Max(m, math.Abs(float64(a[i][j])))
		}
	}
	return d / m
}

// TestSequenceLogprobsMicroBatched: evaluation logprobs do not depend on micro-batching or head chunks.
func TestSequenceLogprobsMicroBatched(t *testing.T) {
	b := tinyBase(t, 12)
	batch := randomRLBatch(5, b.VocabSize(), 6)
	seqs := make([]Sequence, len(batch))
	for i, s := range batch {
		seqs[i] = s.Sequence
	}
	a, _ := b.NewAdapter(DefaultLoRAConfig(), 3)
	whole, err := NewTrainer(b, a, nil).SequenceLogprobs(context.Background(), seqs)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrainer(b, a, nil)
	tr.SetActivationBudget(1)
	tr.headRows = 7
	split, err := tr.SequenceLogprobs(context.Background(), seqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range whole {
		for j := 1; j < len(whole[i]); j++ {
			if d := math.Abs(float64(whole[i][j] - split[i][j])); d > 1e-5 {
				t.Fatalf("sequence %d token %d: %v vs %v", i, j, whole[i][j], split[i][j])
			}
		}
	}
}
