package activities

import (
	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// Learning rates of jobs whose client names none, for base models without a
// recommendation of their own (see defaultLearningRate).
const (
	// DefaultRLLearningRate is the hosted service's RL default (ART's client
	// default), tuned for LoRA on 14B-parameter models.
	DefaultRLLearningRate = 5e-6
	// DefaultSFTLearningRate is the SFT default.
	DefaultSFTLearningRate = 1e-4
)

// defaultLearningRate is the learning rate of a job of kind on base when the
// client sends none (RL: experimental_config.learning_rate null or absent;
// SFT: config.learning_rate). A built-in model brings its own measured
// rates: LoRA on the 3.3M-parameter trainyard/tiny-chat barely moves at
// 5e-6 and needs about 1e-3. Other models get DefaultRLLearningRate or
// DefaultSFTLearningRate. A rate the client sends is always used as is.
func defaultLearningRate(base *engine.Base, kind trainyard.JobKind) float64 {
	rl, sft, ok := base.RecommendedLearningRates()
	switch {
	case kind == trainyard.JobKindSFT && ok:
		return sft
	case kind == trainyard.JobKindSFT:
		return DefaultSFTLearningRate
	case ok:
		return rl
	}
	return DefaultRLLearningRate
}
