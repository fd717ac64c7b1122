package activities

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// ErrMemoryLimit types the non-retryable error of a job whose training
// steps cannot fit the worker's memory limit.
const ErrMemoryLimit = "MemoryLimit"

// stepShape is the largest step of the plan as the memory estimate sees it:
// its longest sequence, its largest batch and whether a pass without
// backward (KL penalty, precalculated logprobs) runs too.
func (p *plan) stepShape(lora engine.LoRAConfig) engine.StepShape {
	s := engine.StepShape{LoRA: lora, EvalPass: p.RL.KLPenaltyCoef > 0 || p.PrecalculateLogprobs}
	for _, st := range p.Steps {
		s.Sequences = max(s.Sequences, len(st.Batch))
		for _, i := range st.Batch {
			switch {
			case p.Kind == trainyard.JobKindRL && i < len(p.Samples):
				s.SeqLen = max(s.SeqLen, len(p.Samples[i].Tokens))
			case p.Kind == trainyard.JobKindSFT && i < len(p.Seqs):
				s.SeqLen = max(s.SeqLen, len(p.Seqs[i].Tokens))
			}
		}
	}
	return s
}

// fitMemory estimates the plan's steps on base within the worker's memory
// limit and returns the estimate (its ActivationBudget is what the trainer
// should use: smaller micro-batches when the limit is tight). A step that
// cannot fit even one sequence at a time is a non-retryable error that
// names the memory needed and the limit: the job fails at its start rather
// than the worker being killed for running out of memory later.
func (a *Activities) fitMemory(base *engine.Base, p *plan, lora engine.LoRAConfig) (engine.MemoryEstimate, error) {
	s := p.stepShape(lora)
	if s.SeqLen == 0 {
		return engine.MemoryEstimate{ActivationBudget: engine.DefaultActivationBudget}, nil
	}
	est, err := base.FitStepMemory(s, a.cfg.MemoryLimit)
	switch {
	case errors.Is(err, engine.ErrMemory):
		return est, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the job does not fit this worker's memory: a training step of its longest sequence (%d tokens) on base model %s needs about %s, but only %s is available (TRAINYARD_MEMORY_LIMIT); a smaller base model or shorter sequences need less",
			s.SeqLen, base.Name(), engine.FormatBytes(est.Total()), engine.FormatBytes(a.cfg.MemoryLimit)), ErrMemoryLimit, err)
	case err != nil:
		return est, classify(err, "estimate the job's memory")
	}
	return est, nil
}
