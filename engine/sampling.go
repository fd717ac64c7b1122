package engine

import "github.com/trainyard/trainyard/engine/sample"

// SampleParams configure Sample: Temperature (0 = greedy), TopP, TopK, Seed, MaxTokens (0 = until the
// context is full), Stop sequences, N completions, TopLogprobs (0..20).
type SampleParams = sample.Params

// TokenLogprob is a token id, its bytes and its logprob under the model at temperature 1 (the policy the
// trainer evaluates, so it serves as the RL "old" logprob whatever the sampling temperature).
type TokenLogprob = sample.TokenLogprob

// SampledToken is a generated token with its top alternatives.
type SampledToken = sample.SampledToken

// Completion is one generated continuation: tokens (without the stop token or stop sequence), text and
// finish reason "stop" or "length".
type Completion = sample.Completion

// Constraint restricts the tokens of one completion (structured outputs); see SampleParams.Constraint.
type Constraint = sample.Constraint
