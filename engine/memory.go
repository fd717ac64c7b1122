package engine

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/trainyard/trainyard/engine/model"
)

// ErrMemory reports a training step that cannot fit the memory it is allowed.
var ErrMemory = errors.New("not enough memory")

// StepShape is what a training step's peak memory depends on besides the model: the longest sequence,
// the number of sequences, the adapter and whether a pass without backward (the KL penalty's reference
// logprobs, or logprobs precalculated for samples that lack them) runs too.
type StepShape struct {
	SeqLen    int        // tokens of the longest sequence
	Sequences int        // sequences per step (0: 1)
	LoRA      LoRAConfig // zero value: DefaultLoRAConfig
	// EvalPass: the step also runs a forward pass without backward (KL penalty, precalculated logprobs).
	EvalPass bool
	// ActivationBudget is the trainer's (0: DefaultActivationBudget).
	ActivationBudget int64
}

// ReferenceStep is the RL step the memory budgets are stated for: 32 sequences of 128 tokens, LoRA rank 8
// on all seven projections.
func ReferenceStep() StepShape {
	return StepShape{SeqLen: 128, Sequences: 32, LoRA: DefaultLoRAConfig()}
}

// MemoryEstimate is the peak memory of a training step, in bytes, by part.
type MemoryEstimate struct {
	Weights     int64 // the frozen base model
	Adapter     int64 // LoRA matrices, their gradients and AdamW's two moments
	Activations int64 // one micro-batch's training pass (and its pass without backward)
	Head        int64 // one chunk of output logits and the softmax scratch
	Runtime     int64 // the Go runtime, code, and collector slack on the step's garbage
	// MicroBatch is the number of sequences per micro-batch; ActivationBudget the budget it was cut for.
	MicroBatch       int
	ActivationBudget int64
}

// Total is the estimated peak.
func (m MemoryEstimate) Total() int64 {
	return m.Weights + m.Adapter + m.Activations + m.Head + m.Runtime
}

// String describes the estimate for messages: "1.6 GiB (weights 0.5 GiB, …)".
func (m MemoryEstimate) String() string {
	return fmt.Sprintf("%s (weights %s, adapter and optimizer %s, activations of %d sequence(s) per micro-batch %s, output head %s, runtime %s)",
		FormatBytes(m.Total()), FormatBytes(m.Weights), FormatBytes(m.Adapter), m.MicroBatch, FormatBytes(m.Activations),
		FormatBytes(m.Head), FormatBytes(m.Runtime))
}

// runtimeBytes is the process's memory besides the engine's buffers: Go runtime and code (~40 MB for a
// trainyard worker) and the garbage a step leaves between collections.
const runtimeBytes = 96 << 20

// EstimateStepMemory estimates the peak memory of a training step of shape s on the model config.json
// describes, held in bfloat16 as OpenDir holds it, without loading its weights (see
// Base.EstimateStepMemory for a loaded one).
func EstimateStepMemory(configJSON []byte, s StepShape) (MemoryEstimate, error) {
	cfg, err := model.ParseHFConfig(configJSON)
	if err != nil {
		return MemoryEstimate{}, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return estimate(cfg, cfg.WeightBytes(model.BF16)+model.PackedBytes(cfg)+model.RopeBytes(cfg), s)
}

// EstimateStepMemory estimates the peak memory of a training step of shape s on b.
func (b *Base) EstimateStepMemory(s StepShape) (MemoryEstimate, error) {
	return estimate(b.w.Cfg, b.w.MemoryBytes(), s)
}

// FitStepMemory estimates a step of shape s within limit bytes (0: no limit): at the default activation
// budget when that fits, otherwise at the largest smaller budget that does (smaller micro-batches, same
// results). When even one sequence per micro-batch does not fit, it returns the estimate at one sequence
// and an ErrMemory that names what is needed and what is available.
func (b *Base) FitStepMemory(s StepShape, limit int64) (MemoryEstimate, error) {
	est, err := b.EstimateStepMemory(s)
	if err != nil || limit <= 0 || est.Total() <= limit {
		return est, err
	}
	// The budget picks whole sequences per micro-batch; the estimate then adds an eighth for the arenas'
	// unfilled blocks, so the budget leaves room for that eighth.
	// The rounded rows (estimate) are outside the budget: those of the micro-batch without the limit, at
	// least as many as the chosen one's.
	s.ActivationBudget = max(1, (limit-(est.Total()-est.Activations)-model.RoundedRowsBytes(b.w.Cfg, est.MicroBatch*s.SeqLen))*8/9)
	if est, err = b.EstimateStepMemory(s); err != nil {
		return est, err
	}
	if est.Total() > limit {
		return est, fmt.Errorf("%w: a training step of %d-token sequences on %s needs about %s, but the memory limit is %s",
			ErrMemory, s.SeqLen, b.name, est, FormatBytes(limit))
	}
	return est, nil
}

func estimate(c model.Config, weights int64, s StepShape) (MemoryEstimate, error) {
	if s.SeqLen <= 0 || s.SeqLen > c.MaxSeqLen {
		return MemoryEstimate{}, fmt.Errorf("%w: sequence length %d (1..%d)", ErrInvalidInput, s.SeqLen, c.MaxSeqLen)
	}
	if s.LoRA.Rank == 0 && len(s.LoRA.TargetModules) == 0 {
		s.LoRA = DefaultLoRAConfig()
	}
	targets, err := s.LoRA.targets()
	if err != nil {
		return MemoryEstimate{}, err
	}
	if s.LoRA.Rank <= 0 {
		return MemoryEstimate{}, fmt.Errorf("%w: lora rank %d", ErrInvalidInput, s.LoRA.Rank)
	}
	e := MemoryEstimate{ActivationBudget: s.ActivationBudget, Runtime: runtimeBytes}
	if e.ActivationBudget <= 0 {
		e.ActivationBudget = DefaultActivationBudget
	}
	e.Weights = weights
	n, nTargets := 0, 0
	for m, on := range targets {
		if on {
			out, in := c.Shape(m)
			n += s.LoRA.Rank * (out + in)
			nTargets++
		}
	}
	e.Adapter = 4 * 4 * int64(n*c.Layers) // weights, gradients, two moments
	// The trainer's micro-batching: whole sequences while the pass fits the budget, at least one.
	perSeq := model.TrainPassBytes(c, s.LoRA.Rank, targets, s.LoRA.Dropout > 0, []int{s.SeqLen})
	e.MicroBatch = int(max(1, min(int64(max(1, s.Sequences)), e.ActivationBudget/perSeq)))
	e.Activations = int64(e.MicroBatch) * perSeq
	if s.EvalPass {
		e.Activations += model.InferPassBytes(c, s.LoRA.Rank, nTargets, e.MicroBatch*s.SeqLen)
	}
	e.Activations += e.Activations / 8 // the arenas' blocks are not filled to the last byte
	// Beside the arena, the rows the forward pass rounds to bfloat16 ahead of its products.
	e.Activations += model.RoundedRowsBytes(c, e.MicroBatch*s.SeqLen)
	rows := min(headChunkRows(c.VocabSize), e.MicroBatch*s.SeqLen)
	e.Head = 4 * int64(c.VocabSize) * (int64(rows) + 2*int64(runtime.GOMAXPROCS(0))) // logits + softmax scratch
	return e, nil
}

// FormatBytes writes n in binary units ("1.5 GiB").
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
