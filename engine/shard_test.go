package engine

import (
	"bytes"
	"context"
	"math"
	"math/rand"
	"reflect"
	"testing"
)

func TestShards(t *testing.T) {
	cases := []struct {
		weights []int
		k       int
		want    [][]int
	}{
		{[]int{10, 10, 10, 10}, 2, [][]int{{0, 1}, {2, 3}}},
		{[]int{10, 10, 10, 10}, 1, [][]int{{0, 1, 2, 3}}},
		{[]int{30, 5, 5, 5, 5}, 2, [][]int{{0}, {1, 2, 3, 4}}},
		{[]int{1, 1}, 5, [][]int{{0}, {1}}},                                                     // never an empty run
		{[]int{0, 0, 0, 9}, 3, [][]int{{0}, {1}, {2, 3}}},                                       // zero weights still leave each run an item
		{[]int{150, 140, 145, 141, 139, 150, 148, 140}, 2, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}}, // the nearer boundary, not the first past half
		{[]int{5}, 0, [][]int{{0}}},
		{nil, 3, [][]int{}},
	}
	for _, c := range cases {
		got := Shards(c.weights, c.k)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Shards(%v, %d) = %v, want %v", c.weights, c.k, got, c.want)
		}
	}
	// Every split covers the batch once, in order, in at most k non-empty runs.
	rng := rand.New(rand.NewSource(1))
	for range 500 {
		w := make([]int, rng.Intn(40))
		for i := range w {
			w[i] = rng.Intn(100)
		}
		k := 1 + rng.Intn(8)
		got := Shards(w, k)
		next := 0
		for _, run := range got {
			if len(run) == 0 {
				t.Fatalf("Shards(%v, %d): empty run in %v", w, k, got)
			}
			for _, i := range run {
				if i != next {
					t.Fatalf("Shards(%v, %d) = %v: not the batch in order", w, k, got)
				}
				next++
			}
		}
		if next != len(w) || len(got) > k || (len(w) >= k && len(got) != k) {
			t.Fatalf("Shards(%v, %d) = %v", w, k, got)
		}
	}
}

// TestShardedStepMatchesOneStep: a step computed as 3 shards on 3 trainers holding the same state, whose
// gradients travel as files and are applied by a fourth, gives the loss, metrics and updated adapter and
// optimizer state of one step over the whole batch, up to float summation order; so does the next step.
func TestShardedStepMatchesOneStep(t *testing.T) {
	ctx := context.Background()
	b := tinyBase(t, 11)
	batch := randomRLBatch(7, b.VocabSize(), 5)
	batch[2].Advantage = 0 // a sample without signal: it counts in no shard's tokens
	seqs := make([]Sequence, len(batch))
	weights := make([]int, len(batch))
	for i, s := range batch {
		seqs[i], weights[i] = s.Sequence, len(s.Tokens)
	}
	cfgs := map[string]*RLConfig{"sft": nil, "cispo": {}, "ppo-sequence-kl": {LossFn: "ppo", ImportanceSamplingLevel: "sequence", KLPenaltyCoef: 0.1}}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			rl := cfg != nil
			one := liveTrainer(t, b)
			shards := Shards(weights, 3)
			workers := []*Trainer{liveTrainer(t, b), liveTrainer(t, b), liveTrainer(t, b)}
			leader := liveTrainer(t, b)
			for step := range 2 {
				opt := DefaultAdamWConfig()
				opt.LearningRate = 1e-2
				var want StepStats
				var err error
				if rl {
					want, err = one.RLStep(ctx, batch, *cfg, opt)
				} else {
					want, err = one.SFTStep(ctx, seqs, opt)
				}
				if err != nil {
					t.Fatal(err)
				}
				var n int
				if rl {
					n, err = leader.RLTokens(batch, *cfg)
				} else {
					n, err = leader.SFTTokens(seqs)
				}
				if err != nil || n == 0 {
					t.Fatalf("N = %d, %v", n, err)
				}
				var gs []*Gradient
				for k, idx := range shards {
					var g *Gradient
					if rl {
						part := make([]RLSample, len(idx))
						for i, j := range idx {
							part[i] = batch[j]
						}
						g, err = workers[k].RLGradient(ctx, part, *cfg, n, k)
					} else {
						part := make([]Sequence, len(idx))
						for i, j := range idx {
							part[i] = seqs[j]
						}
						g, err = workers[k].SFTGradient(ctx, part, n, k)
					}
					if err != nil {
						t.Fatal(err)
					}
					var file bytes.Buffer
					if err := g.Write(&file); err != nil {
						t.Fatal(err)
					}
					back, err := leader.ReadGradient(&file, g.Sums)
					if err != nil {
						t.Fatal(err)
					}
					gs = append(gs, back)
				}
				got, err := leader.ApplyGradients(rl, gs, n, opt)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"loss", "entropy", "policy_loss", "kl_div", "mean_importance_ratio", "clip_fraction", "grad_norm", "num_tokens", "num_trainable_tokens", "num_sequences", "num_trained_sequences"} {
					w, g := want[k], got[k]
					if math.Abs(w-g) > 1e-5*math.Max(1, math.Abs(w)) {
						t.Errorf("step %d %s: one step %v, shards %v", step, k, w, g)
					}
				}
				if want["loss"] == 0 || want["grad_norm"] == 0 {
					t.Fatalf("degenerate step: %v", want)
				}
				if d := relDiff(adapterParams(one.adapter), adapterParams(leader.adapter)); d > 1e-4 {
					t.Errorf("step %d: updated adapters differ: relative error %.2g", step, d)
				}
				if d := relDiff(one.opt.st.V, leader.opt.st.V); d > 1e-4 {
					t.Errorf("step %d: optimizer second moments differ: relative error %.2g", step, d)
				}
				// The shard trainers take the leader's new adapter, as the next step's shards load it.
				for _, w := range workers {
					copy2(adapterParams(w.adapter), adapterParams(leader.adapter))
					w.opt.st.Step = leader.opt.st.Step
				}
			}
		})
	}
}

func copy2(dst, src [][]float32) {
	for i := range dst {
		copy(dst[i], src[i])
	}
}

// TestApplyGradientsRefusesMismatch: gradients that do not add up to the step are refused, not applied.
func TestApplyGradientsRefusesMismatch(t *testing.T) {
	ctx := context.Background()
	b := tinyBase(t, 11)
	batch := randomRLBatch(2, b.VocabSize(), 5)
	seqs := []Sequence{batch[0].Sequence, batch[1].Sequence}
	a, _ := b.NewAdapter(DefaultLoRAConfig(), 3)
	tr := NewTrainer(b, a, nil)
	n, err := tr.SFTTokens(seqs)
	if err != nil {
		t.Fatal(err)
	}
	g, err := tr.SFTGradient(ctx, seqs[:1], n, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := adapterBits(a)
	if _, err := tr.ApplyGradients(false, []*Gradient{g}, n, DefaultAdamWConfig()); err == nil {
		t.Fatal("applied the trainer's own buffer")
	}
	var file bytes.Buffer
	if err := g.Write(&file); err != nil {
		t.Fatal(err)
	}
	back, err := tr.ReadGradient(&file, g.Sums)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ApplyGradients(false, []*Gradient{back}, n, DefaultAdamWConfig()); err == nil {
		t.Fatal("applied one shard of two as the whole step")
	}
	if !equalBits(before, adapterBits(a)) {
		t.Fatal("a refused update changed the adapter")
	}
}
