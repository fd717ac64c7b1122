package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/train"
)

// AdamWConfig configures one optimizer step: LearningRate, Beta1, Beta2, Eps, WeightDecay and MaxGradNorm
// (global-norm clipping, 0 = off). Use DefaultAdamWConfig and override LearningRate per step for a
// schedule (ScheduleLR).
type AdamWConfig = train.AdamW

// DefaultAdamWConfig returns lr 1e-4, betas (0.9, 0.999), eps 1e-8, no weight decay, clipping at 1.
func DefaultAdamWConfig() AdamWConfig { return train.DefaultAdamW() }

// ScheduleLR picks the learning rate of step (0-based) from a per-step list (the last value repeats), or
// def when the list is empty (constant schedule).
func ScheduleLR(rates []float32, step int, def float32) float32 {
	return train.ScheduleLR(rates, step, def)
}

// StepStats are a step's metrics: loss, grad_norm, learning_rate, num_tokens, num_trainable_tokens,
// num_sequences, tokens_per_second, matmul_gflops (achieved rate of the step's matrix products) and, for
// RL, policy_loss, entropy, kl_div, clip_fraction, mean_importance_ratio.
type StepStats map[string]float64

// DefaultActivationBudget is the arena memory a training pass may take before a batch is split into
// micro-batches (see Trainer.SetActivationBudget): 1.125 GiB holds a group of 8 rollouts of 128 tokens
// after a 98-token prompt at SmolLM2-135M's shape (1.08 GB), so the prompt is passed once per group (at
// 1 GiB twice, and the step took 8–15% longer), and 10 unshared sequences of 128 tokens in about the memory
// 7 took before a pass stopped keeping the norms' outputs and the activation.
const DefaultActivationBudget = 9 << 27

// Trainer trains an adapter on top of a frozen base. Steps are serialised; the adapter is modified in place.
//
// A batch is processed in micro-batches whose activations fit the activation budget, with the adapter's
// gradients accumulated over them and one optimizer update per step: the result is that of one pass over
// the whole batch (up to float rounding), and a step's memory does not grow with the batch.
type Trainer struct {
	mu       sync.Mutex
	base     *Base
	adapter  *Adapter
	opt      *OptimizerState
	grads    *model.LoRA
	budget   int64
	mem      *passMemory
	headRows int  // rows per head chunk (0: headChunkRows; tests set it to force chunking)
	noShare  bool // pass every sequence whole (tests and benchmarks compare with prefixes shared)
}

// passMemory is a trainer's working memory, reused from step to step and, through the base
// (Trainer.Close), from one trainer to the next: a training job makes a trainer, and an RL job of one
// step (ART's iteration) used to fault in its whole arena afresh — about 300,000 pages for a micro-batch
// of SmolLM2-135M's 32 × 226 tokens, a second or more of its step on the 2-core VM, whose hypervisor
// takes an exit per page it maps.
type passMemory struct {
	arena    model.Arena // activations of the training pass
	refArena model.Arena // buffers of passes without backward (reference and evaluation logprobs)
	logits   []float32   // one chunk of head logits
}

// arenaBytes is the memory m's arenas hold, what the activation budget bounds.
func (m *passMemory) arenaBytes() int64 { return m.arena.Bytes() + m.refArena.Bytes() }

// bytes is the memory m holds.
func (m *passMemory) bytes() int64 { return m.arenaBytes() + int64(len(m.logits))*4 }

// NewTrainer returns a trainer for adapter a (which must belong to b) with optimizer state opt (nil = fresh).
func NewTrainer(b *Base, a *Adapter, opt *OptimizerState) *Trainer {
	if opt == nil {
		opt = NewOptimizerState(a)
	}
	sh := b.shared
	sh.spareMu.Lock()
	mem := sh.spare
	sh.spare = nil
	sh.spareMu.Unlock()
	if mem == nil {
		mem = &passMemory{}
	}
	return &Trainer{base: b, adapter: a, opt: opt, grads: a.lora.ZeroLike(), budget: DefaultActivationBudget, mem: mem}
}

// Close hands the trainer's working memory to its base for the next trainer (the next job on the same
// base model), which then finds its buffers mapped; the trainer must not be used after. The base keeps one
// such memory, of at most a step's activations within the budget it was cut for (SetActivationBudget).
func (t *Trainer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	mem := t.mem
	t.mem = nil
	if mem == nil {
		return
	}
	sh := t.base.shared
	sh.spareMu.Lock()
	defer sh.spareMu.Unlock()
	if sh.spare == nil || sh.spare.bytes() < mem.bytes() {
		sh.spare = mem
	}
}

// SetActivationBudget sets the arena memory (bytes) one training pass may use; batches that need more are
// split into micro-batches of whole sequences (a sequence that alone needs more forms its own). Smaller
// budgets bound memory tighter at some cost in speed; results do not depend on it beyond float rounding.
func (t *Trainer) SetActivationBudget(bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.budget = bytes
	// Memory a previous trainer left (NewTrainer) that holds more than this budget allows (with the eighth
	// the estimate adds for the arenas' unfilled blocks) would keep it above the memory it was cut for.
	if t.mem.arenaBytes() > bytes+bytes/8 {
		t.mem = &passMemory{}
	}
}

// Adapter returns the adapter being trained.
func (t *Trainer) Adapter() *Adapter { return t.adapter }

// Optimizer returns the optimizer state.
func (t *Trainer) Optimizer() *OptimizerState { return t.opt }

// validate checks sequences against the model and counts their trainable tokens (position 0 cannot be
// predicted, so it never counts).
func (t *Trainer) validate(seqs []Sequence) (tokens, trainable int, err error) {
	if err := t.adapter.checkBase(t.base); err != nil {
		return 0, 0, err
	}
	c := t.base.w.Cfg
	for i, s := range seqs {
		if len(s.Tokens) == 0 || len(s.Tokens) > c.MaxSeqLen {
			return 0, 0, fmt.Errorf("%w: sequence %d has %d tokens (1..%d)", ErrInvalidInput, i, len(s.Tokens), c.MaxSeqLen)
		}
		if len(s.Trainable) != len(s.Tokens) || (s.OldLogprobs != nil && len(s.OldLogprobs) != len(s.Tokens)) {
			return 0, 0, fmt.Errorf("%w: sequence %d: trainable/logprob lengths differ from its %d tokens", ErrInvalidInput, i, len(s.Tokens))
		}
		for j, id := range s.Tokens {
			if id < 0 || id >= c.VocabSize {
				return 0, 0, fmt.Errorf("%w: sequence %d token %d has id %d (vocabulary %d)", ErrInvalidInput, i, j, id, c.VocabSize)
			}
			if j > 0 && s.Trainable[j] {
				trainable++
			}
		}
		tokens += len(s.Tokens)
	}
	return tokens, trainable, nil
}

// trainRows lists, for a pass over batch, the rows that predict trainable tokens and those tokens.
// pos[k] is (sequence index, token position) of row k.
func trainRows(p *model.Pass, seqs []Sequence, batch []passSeq) (rows, targets []int, pos [][2]int) {
	for ci, ps := range batch {
		if ps.si < 0 { // a shared prefix predicts no trainable token (shareable)
			continue
		}
		s := seqs[ps.si]
		for j := ps.from + 1; j < len(s.Tokens); j++ {
			if s.Trainable[j] {
				rows = append(rows, p.Offsets()[ci]+j-ps.from-1)
				targets = append(targets, s.Tokens[j])
				pos = append(pos, [2]int{ps.si, j})
			}
		}
	}
	return rows, targets, pos
}

func (t *Trainer) forward(ctx context.Context, batch []passSeq, lora *model.LoRA, keep bool, seed int64) (*model.Pass, error) {
	toks := make([][]int, len(batch))
	var prefix []int
	for i, ps := range batch {
		toks[i] = ps.toks
		if ps.prefix >= 0 && prefix == nil {
			prefix = make([]int, len(batch))
			for j := range prefix {
				prefix[j] = batch[j].prefix
			}
		}
	}
	opt := model.PassOptions{LoRA: lora, Keep: keep, DropoutSeed: seed, Arena: &t.mem.refArena, Prefix: prefix}
	if keep {
		opt.Arena = &t.mem.arena
	}
	opt.Arena.Reset()
	p, err := t.base.w.Forward(ctx, toks, opt)
	switch {
	case errors.Is(err, model.ErrInput):
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	case err != nil:
		// A cancelled or expired ctx is not the data's fault: callers
		// (the training activity) must see ctx.Err() to retry or stop.
		return nil, err
	}
	return p, nil
}

// SFTStep takes one optimizer step on the mean cross-entropy of the trainable tokens of seqs:
// loss = −(1/N)·Σ log p(token) over the N trainable tokens of the whole batch.
func (t *Trainer) SFTStep(ctx context.Context, seqs []Sequence, opt AdamWConfig) (StepStats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	n, err := t.sftTokens(seqs)
	if err != nil {
		return nil, err
	}
	t.zeroGrads()
	sums, err := t.sftGrads(ctx, seqs, n, 0)
	if err != nil {
		return nil, err
	}
	return t.apply(false, sums, n, opt, time.Since(start))
}

// sftTokens validates an SFT batch and counts its trainable tokens, N.
func (t *Trainer) sftTokens(seqs []Sequence) (int, error) {
	_, n, err := t.validate(seqs)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: no trainable tokens", ErrInvalidInput)
	}
	return n, nil
}

// sftGrads adds to t.grads the gradient of −(1/n)·Σ log p(token) over the trainable tokens of seqs, n
// being those of the whole step (seqs may be one shard of it), and returns the sums of its statistics.
// shard varies the dropout masks between shards.
func (t *Trainer) sftGrads(ctx context.Context, seqs []Sequence, n, shard int) (GradientSums, error) {
	tokens, trainable, err := t.validate(seqs)
	sums := GradientSums{Tokens: tokens, Trainable: trainable, Sequences: len(seqs), Trained: len(seqs)}
	if err != nil {
		return sums, err
	}
	var coef []float64 // ∂loss/∂logp = −1/n for every row of a chunk
	for ci, batch := range t.microBatches(seqs, !t.noShare) {
		p, err := t.forward(ctx, batch, t.adapter.lora, true, t.seed(shard, ci))
		if err != nil {
			return sums, err
		}
		rows, targets, _ := trainRows(p, seqs, batch)
		st, err := t.head(p, rows, targets, func(lo, hi int, _ train.TokenStats) ([]float64, error) {
			for len(coef) < hi-lo {
				coef = append(coef, -1/float64(n))
			}
			return coef[:hi-lo], nil
		})
		if err != nil {
			return sums, err
		}
		for i := range rows {
			sums.Loss -= st.Logprob[i]
			sums.Entropy += st.Entropy[i]
		}
		if err := p.BackwardHidden(ctx, model.Grads{L: t.grads}); err != nil {
			return sums, err
		}
		sums.Flops += p.FlopsFwd + p.FlopsBwd
	}
	return sums, nil
}

// seed is the dropout seed of micro-batch ci of a shard's pass in the next optimizer step.
func (t *Trainer) seed(shard, ci int) int64 {
	return t.opt.st.Step*1000 + int64(shard)*100 + int64(ci)
}

func (t *Trainer) zeroGrads() {
	for _, g := range adapterParamsOf(t.grads, t.adapter.cfg) {
		clear(g)
	}
}

func adapterParamsOf(l *model.LoRA, cfg model.Config) [][]float32 {
	var ps [][]float32
	for _, t := range l.Tensors(cfg) {
		ps = append(ps, t.Data)
	}
	return ps
}

// apply takes the optimizer step with the gradient in t.grads, the sum over the step's shards, and
// turns the shards' summed statistics into the step's: means over the step's n trainable tokens, and
// rates over elapsed, the step's time. An RL step without signal (n = 0) changes nothing and says
// skipped=1.
func (t *Trainer) apply(rl bool, sums GradientSums, n int, opt AdamWConfig, elapsed time.Duration) (StepStats, error) {
	if rl && n == 0 {
		return StepStats{"skipped": 1, "loss": 0, "num_sequences": float64(sums.Sequences),
			"learning_rate": float64(opt.LearningRate)}, nil
	}
	N := float64(n)
	if loss := sums.Loss / N; math.IsNaN(loss) || math.IsInf(loss, 0) {
		return nil, fmt.Errorf("%w: loss %v", ErrNonFinite, loss)
	}
	norm, err := t.opt.st.Update(adapterParams(t.adapter), adapterParamsOf(t.grads, t.adapter.cfg), opt)
	if err != nil {
		if !isNonFinite(err) {
			err = fmt.Errorf("%w: %v", ErrInvalidInput, err)
		}
		return nil, err
	}
	el := elapsed.Seconds()
	stats := StepStats{"grad_norm": norm, "learning_rate": float64(opt.LearningRate), "num_tokens": float64(sums.Tokens),
		"num_trainable_tokens": float64(sums.Trainable), "num_sequences": float64(sums.Sequences),
		"tokens_per_second": float64(sums.Tokens) / el, "matmul_gflops": float64(sums.Flops) / el / 1e9,
		"loss": sums.Loss / N, "entropy": sums.Entropy / N}
	if rl {
		stats["policy_loss"], stats["kl_div"] = sums.PolicyLoss/N, sums.KL/N
		stats["clip_fraction"], stats["mean_importance_ratio"] = float64(sums.Clipped)/N, sums.Ratio/N
		stats["num_trained_sequences"] = float64(sums.Trained)
	}
	return stats, nil
}
