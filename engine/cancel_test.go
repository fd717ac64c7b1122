package engine

import (
	"context"
	"errors"
	"testing"
)

// TestCancelledStepIsNotInvalidInput: a training step whose context is
// cancelled (a job cancelled, a worker stopping) reports the context's
// error, never ErrInvalidInput, which the training activity treats as bad
// data and fails the job for good.
func TestCancelledStepIsNotInvalidInput(t *testing.T) {
	b := tinyBase(t, 1)
	a, err := b.NewAdapter(LoRAConfig{Rank: 4, Alpha: 8, TargetModules: []string{"q", "v"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrainer(b, a, nil)
	seqs := sftSeqs(t, b)
	batch := make([]RLSample, len(seqs))
	for i, s := range seqs {
		batch[i] = RLSample{Sequence: s, Advantage: float32(i%2*2 - 1)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"SFTStep": func() error { _, err := tr.SFTStep(ctx, seqs, DefaultAdamWConfig()); return err },
		"RLStep": func() error {
			_, err := tr.RLStep(ctx, batch, RLConfig{}, DefaultAdamWConfig())
			return err
		},
		"SequenceLogprobs": func() error { _, err := tr.SequenceLogprobs(ctx, seqs); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s with a cancelled context: %v; want context.Canceled, not ErrInvalidInput", name, err)
		}
	}
}
