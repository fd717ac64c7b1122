// Package enginetest holds helpers for tests that train the engine's models
// through trainyard: the assistant Choice a client pastes into a trajectory
// after sampling, and the likelihood measure that tells whether a training
// step moved the model towards its data.
package enginetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/trainyard/trainyard/engine"
)

// Choice is c as a client of /v1/chat/completions pastes it into a
// trajectory's messages_and_choices: the assistant message with its
// sampling logprobs, each token named "token_id:<id>" so the trainer
// re-uses the sampled tokens instead of re-tokenising the text.
func Choice(c engine.Completion) map[string]any {
	lps := make([]map[string]any, len(c.Tokens))
	for i, tok := range c.Tokens {
		lps[i] = map[string]any{"token": fmt.Sprintf("token_id:%d", tok.ID), "logprob": tok.Logprob, "bytes": []int{}, "top_logprobs": []any{}}
	}
	return map[string]any{"finish_reason": c.FinishReason, "index": c.Index,
		"message":  map[string]any{"role": "assistant", "content": c.Text},
		"logprobs": map[string]any{"content": lps}}
}

// NLL is the mean negative log-likelihood of the trainable tokens of seqs
// under base plus ad (nil: a fresh adapter, i.e. the base model alone).
func NLL(t testing.TB, base *engine.Base, ad *engine.Adapter, seqs []engine.Sequence) float64 {
	t.Helper()
	if ad == nil {
		var err error
		if ad, err = base.NewAdapter(engine.DefaultLoRAConfig(), 1); err != nil {
			t.Fatal(err)
		}
	}
	lps, err := engine.NewTrainer(base, ad, nil).SequenceLogprobs(context.Background(), seqs)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	var n int
	for i, s := range seqs {
		for j := 1; j < len(s.Tokens); j++ {
			if s.Trainable[j] {
				sum -= float64(lps[i][j])
				n++
			}
		}
	}
	return sum / float64(n)
}
