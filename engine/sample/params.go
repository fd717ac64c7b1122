// Package sample generates completions from a model with a KV cache: temperature, top-k and top-p
// sampling from a per-completion seeded generator, stop tokens and stop sequences, and per-token logprobs
// with top alternatives. All n completions of a request advance together as one batched decode step.
package sample

import (
	"errors"
	"fmt"
)

// ErrContextOverflow reports a prompt (plus max tokens) longer than the model's context.
var ErrContextOverflow = errors.New("prompt and max tokens exceed the model's context length")

// ErrInvalidParams reports sampling parameters out of range.
var ErrInvalidParams = errors.New("invalid sampling parameters")

// Params configure sampling.
type Params struct {
	Temperature float32  // 0 = greedy (argmax)
	TopP        float32  // nucleus mass in (0, 1]; 0 or 1 = off
	TopK        int      // keep the k most likely tokens; 0 = off
	Seed        int64    // completion i draws from a generator seeded by (Seed, i)
	MaxTokens   int      // 0 = until the context is full
	Stop        []string // stop sequences (not included in the output)
	N           int      // completions (0 means 1)
	TopLogprobs int      // alternatives reported per position, 0..20
	// Constraint, when set, returns the constraint of completion index (structured outputs); nil = none.
	Constraint func(index int) Constraint
}

// Validate checks ranges and fills N.
func (p *Params) Validate() error {
	if p.N == 0 {
		p.N = 1
	}
	switch {
	case p.Temperature < 0 || p.Temperature != p.Temperature:
		return fmt.Errorf("%w: temperature %g", ErrInvalidParams, p.Temperature)
	case p.TopP < 0 || p.TopP > 1:
		return fmt.Errorf("%w: top_p %g", ErrInvalidParams, p.TopP)
	case p.TopK < 0 || p.MaxTokens < 0:
		return fmt.Errorf("%w: top_k %d, max_tokens %d", ErrInvalidParams, p.TopK, p.MaxTokens)
	case p.N < 1 || p.N > 128:
		return fmt.Errorf("%w: n %d (1..128)", ErrInvalidParams, p.N)
	case p.TopLogprobs < 0 || p.TopLogprobs > 20:
		return fmt.Errorf("%w: top_logprobs %d (0..20)", ErrInvalidParams, p.TopLogprobs)
	}
	for _, s := range p.Stop {
		if s == "" {
			return fmt.Errorf("%w: empty stop sequence", ErrInvalidParams)
		}
	}
	return nil
}

// TokenLogprob is a token with its log-probability under the model (temperature 1, before top-k/top-p),
// which is the policy the trainer evaluates, so these values serve directly as RL "old" logprobs.
type TokenLogprob struct {
	ID      int
	Bytes   []byte
	Logprob float32
}

// SampledToken is one generated token and the most likely alternatives at its position.
type SampledToken struct {
	TokenLogprob
	Top []TokenLogprob
}

// Completion is one generated continuation. Tokens exclude the stop token or stop sequence that ended it.
type Completion struct {
	Index        int
	Tokens       []SampledToken
	Text         string
	FinishReason string // "stop" or "length"
	// CachedPrompt is the number of prompt tokens whose prefill the request took from another request with
	// the same prompt instead of computing it (Batcher.Run; the same for every completion of a request).
	CachedPrompt int
}
