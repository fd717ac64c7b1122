package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SFTSettings is a validated SFT job configuration with defaults applied.
type SFTSettings struct {
	// BatchSize is the number of conversations per gradient step; 0 means
	// "auto" (AutoBatchSize).
	BatchSize int
	// LearningRates holds one rate for every step, or a list with one rate
	// per batch (its length must equal the number of steps, checked once
	// the data is read); nil when the client sent none, and the job then
	// trains at the base model's default (defaultLearningRate).
	LearningRates []float64
	// AssistantTurns is "all" (every assistant turn is trained) or "last".
	AssistantTurns string
	// Epochs is the number of passes over the data (experimental_config
	// num_epochs, default 1).
	Epochs int
	// Shuffle reorders the conversations every epoch, deterministically
	// from Seed (experimental_config shuffle/seed; default off: the client
	// decides the order).
	Shuffle bool
	Seed    int64
}

// sftConfigWire is config as clients send it.
type sftConfigWire struct {
	BatchSize      json.RawMessage `json:"batch_size"`
	LearningRate   json.RawMessage `json:"learning_rate"`
	AssistantTurns *string         `json:"assistant_turns"`
}

// sftExperimentalWire is the part of experimental_config that SFT reads.
type sftExperimentalWire struct {
	NumEpochs *int   `json:"num_epochs"`
	Shuffle   *bool  `json:"shuffle"`
	Seed      *int64 `json:"seed"`
}

// ParseSFTConfig validates an SFT job's config and experimental_config
// (each null, absent or an object; unknown keys are ignored).
func ParseSFTConfig(config, experimental json.RawMessage) (SFTSettings, []FieldError) {
	s := SFTSettings{AssistantTurns: "all", Epochs: 1}
	var w sftConfigWire
	errs := decodeObject(config, &w, "config")
	var x sftExperimentalWire
	errs = append(errs, decodeObject(experimental, &x, "experimental_config")...)
	if errs != nil {
		return s, errs
	}
	bad := func(loc []any, msg string, input any) {
		errs = append(errs, FieldError{Loc: loc, Msg: msg, Type: "value_error", Input: input})
	}
	if b := bytes.TrimSpace(w.BatchSize); len(b) > 0 && !isNull(b) {
		var n int
		var auto string
		switch {
		case json.Unmarshal(b, &n) == nil:
			if n < 1 {
				bad([]any{"config", "batch_size"}, "must be at least 1", n)
			}
			s.BatchSize = n
		case json.Unmarshal(b, &auto) == nil && auto == "auto":
		default:
			bad([]any{"config", "batch_size"}, `must be an integer or "auto"`, json.RawMessage(b))
		}
	}
	if b := bytes.TrimSpace(w.LearningRate); len(b) > 0 && !isNull(b) {
		var one float64
		var many []float64
		switch {
		case json.Unmarshal(b, &one) == nil:
			many = []float64{one}
		case json.Unmarshal(b, &many) == nil && len(many) > 0:
		default:
			bad([]any{"config", "learning_rate"}, "must be a number or a non-empty list of numbers", json.RawMessage(b))
		}
		for i, lr := range many {
			if !finite(lr) || lr <= 0 || lr > MaxLearningRate {
				loc := []any{"config", "learning_rate"}
				if b[0] == '[' {
					loc = append(loc, i)
				}
				bad(loc, fmt.Sprintf("must be greater than 0 and at most %g", MaxLearningRate), lr)
			}
		}
		if len(many) > 0 {
			s.LearningRates = many
		}
	}
	if v := w.AssistantTurns; v != nil {
		if *v != "all" && *v != "last" {
			bad([]any{"config", "assistant_turns"}, `must be "all" or "last"`, *v)
		}
		s.AssistantTurns = *v
	}
	if v := x.NumEpochs; v != nil {
		if *v < 1 || *v > 1000 {
			bad([]any{"experimental_config", "num_epochs"}, "must be between 1 and 1000", *v)
		}
		s.Epochs = *v
	}
	if x.Shuffle != nil {
		s.Shuffle = *x.Shuffle
	}
	if x.Seed != nil {
		s.Seed = *x.Seed
	}
	return s, errs
}

// AutoBatchSize is the batch size "auto" picks for n conversations: small
// batches suit a CPU trainer, and tiny data sets still get a few steps.
func AutoBatchSize(n int) int {
	switch {
	case n >= 64:
		return 8
	case n >= 16:
		return 4
	case n >= 4:
		return 2
	}
	return 1
}

// StepLearningRates expands the configured rates to one per step.
func (s SFTSettings) StepLearningRates(steps int) ([]float64, error) {
	if len(s.LearningRates) == 1 {
		out := make([]float64, steps)
		for i := range out {
			out[i] = s.LearningRates[0]
		}
		return out, nil
	}
	if len(s.LearningRates) != steps {
		return nil, fmt.Errorf("config.learning_rate lists %d rates but the data makes %d batches; give one rate per batch or a single number",
			len(s.LearningRates), steps)
	}
	return s.LearningRates, nil
}
