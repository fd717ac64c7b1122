package engine

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

var sftData = [][2]string{{"Capital of France?", "Paris"}, {"Color of grass?", "green"},
	{"Say hi", "hello there"}, {"2+2?", "4"}}

func sftSeqs(t testing.TB, b *Base) []Sequence {
	var seqs []Sequence
	for _, qa := range sftData {
		s, err := b.RenderTraining([]Message{{Role: "user", Content: qa[0]},
			{Role: "assistant", Content: qa[1], Trainable: true}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	return seqs
}

// TestSFTLearnsAnswers: SFT on four Q&A pairs fits four Q&A pairs within 150 steps (loss far below half), the model then answers them
// greedily, and the base weights stay bit-identical.
func TestSFTLearnsAnswers(t *testing.T) {
	ctx := context.Background()
	b := tinyBase(t, 1)
	before := baseBits(b)
	a, err := b.NewAdapter(LoRAConfig{Rank: 8, Alpha: 16, TargetModules: []string{"q", "k", "v", "o", "gate", "up", "down"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrainer(b, a, nil)
	seqs := sftSeqs(t, b)
	opt := DefaultAdamWConfig()
	opt.LearningRate = 1e-2
	var first, last float64
	steps := 0
	for ; steps < 300; steps++ {
		st, err := tr.SFTStep(ctx, seqs, opt)
		if err != nil {
			t.Fatal(err)
		}
		if steps == 0 {
			first = st["loss"]
		}
		last = st["loss"]
		if last < 0.05 {
			break
		}
	}
	if !(last < first/2) {
		t.Fatalf("loss %.3f -> %.3f did not halve", first, last)
	}
	for _, qa := range sftData {
		prompt, _ := b.RenderPrompt([]Message{{Role: "user", Content: qa[0]}}, nil)
		out, err := b.Sample(ctx, a, prompt, SampleParams{MaxTokens: 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out[0].Text) != qa[1] {
			t.Errorf("%q: got %q, want %q", qa[0], out[0].Text, qa[1])
		}
	}
	if !equalBits(before, baseBits(b)) {
		t.Fatal("base weights changed during training")
	}
	t.Logf("loss %.3f -> %.3f in %d steps", first, last, steps)
}

// TestResumeIsExact: 4 steps straight equal 2 steps, save adapter + optimizer, load, 2 more steps.
func TestResumeIsExact(t *testing.T) {
	ctx := context.Background()
	b := tinyBase(t, 2)
	seqs := sftSeqs(t, b)
	opt := DefaultAdamWConfig()
	opt.LearningRate = 5e-3
	cfg := DefaultLoRAConfig()
	cfg.Dropout = 0.1
	run := func(a *Adapter, o *OptimizerState, steps int) *Trainer {
		tr := NewTrainer(b, a, o)
		for i := 0; i < steps; i++ {
			if _, err := tr.SFTStep(ctx, seqs, opt); err != nil {
				t.Fatal(err)
			}
		}
		return tr
	}
	a1, _ := b.NewAdapter(cfg, 3)
	straight := run(a1, nil, 4)

	a2, _ := b.NewAdapter(cfg, 3)
	half := run(a2, nil, 2)
	var wbuf, obuf bytes.Buffer
	if err := half.Adapter().WriteWeights(&wbuf); err != nil {
		t.Fatal(err)
	}
	if err := half.Optimizer().Write(&obuf); err != nil {
		t.Fatal(err)
	}
	cj, _ := half.Adapter().ConfigJSON()
	a3, err := b.LoadAdapter(&wbuf, cj)
	if err != nil {
		t.Fatal(err)
	}
	if !equalBits(adapterBits(a3), adapterBits(half.Adapter())) {
		t.Fatal("adapter save/load is not bit-exact")
	}
	o3, err := ReadOptimizerState(&obuf, a3)
	if err != nil {
		t.Fatal(err)
	}
	resumed := run(a3, o3, 2)
	if !equalBits(adapterBits(straight.Adapter()), adapterBits(resumed.Adapter())) {
		t.Fatal("resumed training differs from uninterrupted training")
	}
	if resumed.Optimizer().Step() != 4 {
		t.Fatalf("optimizer step %d, want 4", resumed.Optimizer().Step())
	}
}

// TestTrainingDeterministic: the same seed and data give bit-identical adapters after SFT and RL steps.
func TestTrainingDeterministic(t *testing.T) {
	ctx := context.Background()
	run := func() []uint32 {
		b := tinyBase(t, 4)
		cfg := DefaultLoRAConfig()
		cfg.Dropout = 0.05
		a, _ := b.NewAdapter(cfg, 9)
		tr := NewTrainer(b, a, nil)
		seqs := sftSeqs(t, b)
		opt := DefaultAdamWConfig()
		for i := 0; i < 3; i++ {
			if _, err := tr.SFTStep(ctx, seqs, opt); err != nil {
				t.Fatal(err)
			}
		}
		var batch []RLSample
		for i, s := range seqs {
			batch = append(batch, RLSample{Sequence: s, Advantage: float32(i) - 1.5})
		}
		for i := 0; i < 2; i++ {
			if _, err := tr.RLStep(ctx, batch, RLConfig{KLPenaltyCoef: 0.1}, opt); err != nil {
				t.Fatal(err)
			}
		}
		return adapterBits(a)
	}
	if !equalBits(run(), run()) {
		t.Fatal("two identical runs produced different adapters")
	}
}
