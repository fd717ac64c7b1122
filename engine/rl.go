package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/train"
)

// RLConfig selects the RL objective: LossFn "cispo" (default) or "ppo"; Epsilon/EpsilonHigh clip range
// (0 = defaults: ppo 0.2/ε, cispo 1/4); ImportanceSamplingLevel "token" (default) or "sequence";
// KLPenaltyCoef β of a KL penalty to the base model with the adapter off (0 = off). Formulas: train.RLLoss.
type RLConfig = train.RLConfig

// RLSample is a training sequence (its Trainable tokens are the sampled Choice tokens) and its advantage.
type RLSample struct {
	Sequence
	Advantage float32
}

// Advantages turns per-group rewards into group-relative advantages: reward − group mean, divided by the
// group's standard deviation when scaleRewards; groups whose rewards are all equal get 0 (no signal);
// advantageBalance ∈ [−1, 1] scales positive advantages by 1+b and negative ones by 1−b.
func Advantages(groupRewards [][]float64, scaleRewards bool, advantageBalance float64) [][]float64 {
	return train.Advantages(groupRewards, scaleRewards, advantageBalance)
}

func isNonFinite(err error) bool { return errors.Is(err, ErrNonFinite) }

// RLStep takes one optimizer step of the policy-gradient loss over batch, averaged over the trainable
// tokens of the samples that carry signal. Samples with advantage 0 are skipped unless a KL penalty is on
// (they would contribute nothing); if no sample is left the adapter and optimizer state are left untouched
// and the stats say skipped=1.
func (t *Trainer) RLStep(ctx context.Context, batch []RLSample, cfg RLConfig, opt AdamWConfig) (StepStats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	n, err := t.rlTokens(batch, cfg)
	if err != nil {
		return nil, err
	}
	t.zeroGrads()
	sums, err := t.rlGrads(ctx, batch, cfg, n, 0)
	if err != nil {
		return nil, err
	}
	return t.apply(true, sums, n, opt, time.Since(start))
}

// rlSignal returns the samples of batch that carry signal (advantage ≠ 0, or all of them when a KL
// penalty is on) with their advantages, after checking the configuration and every sample.
func (t *Trainer) rlSignal(batch []RLSample, cfg RLConfig) (RLConfig, []Sequence, []float64, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return cfg, nil, nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	var seqs []Sequence
	var adv []float64
	all := make([]Sequence, len(batch))
	for i, s := range batch {
		all[i] = s.Sequence
		if math.IsNaN(float64(s.Advantage)) || math.IsInf(float64(s.Advantage), 0) {
			return cfg, nil, nil, fmt.Errorf("%w: sample %d has advantage %v", ErrInvalidInput, i, s.Advantage)
		}
		if s.Advantage != 0 || cfg.KLPenaltyCoef > 0 {
			seqs = append(seqs, s.Sequence)
			adv = append(adv, float64(s.Advantage))
		}
	}
	if _, _, err := t.validate(all); err != nil {
		return cfg, nil, nil, err
	}
	return cfg, seqs, adv, nil
}

// rlTokens validates an RL batch and counts N, the trainable tokens of its samples with signal.
func (t *Trainer) rlTokens(batch []RLSample, cfg RLConfig) (int, error) {
	_, seqs, _, err := t.rlSignal(batch, cfg)
	if err != nil {
		return 0, err
	}
	_, n, _ := t.validate(seqs)
	return n, nil
}

// rlGrads adds to t.grads the gradient of the policy-gradient loss of batch's samples with signal,
// normalised by n, the trainable tokens of the whole step (batch may be one shard of it), and returns the
// sums of its statistics. shard varies the dropout masks between shards.
func (t *Trainer) rlGrads(ctx context.Context, batch []RLSample, cfg RLConfig, n, shard int) (GradientSums, error) {
	sums := GradientSums{Sequences: len(batch)}
	cfg, seqs, adv, err := t.rlSignal(batch, cfg)
	if err != nil {
		return sums, err
	}
	sums.Tokens, sums.Trainable, _ = t.validate(seqs)
	sums.Trained = len(seqs)
	if sums.Trainable == 0 {
		return sums, nil
	}
	for ci, batch := range t.microBatches(seqs, !t.noShare) {
		var ref []float64
		if cfg.KLPenaltyCoef > 0 {
			if ref, sums.Flops, err = t.refLogprobs(ctx, seqs, batch, sums.Flops); err != nil {
				return sums, err
			}
		}
		p, err := t.forward(ctx, batch, t.adapter.lora, true, t.seed(shard, ci))
		if err != nil {
			return sums, err
		}
		rows, targets, pos := trainRows(p, seqs, batch)
		// rlSeqs groups rows lo..hi (whose logprobs are logp) by sequence: a sequence's rows are contiguous.
		rlSeqs := func(lo, hi int, logp []float64) []train.RLSeq {
			var out []train.RLSeq
			for r := lo; r < hi; r++ {
				si, j := pos[r][0], pos[r][1]
				if r == lo || pos[r-1][0] != si {
					out = append(out, train.RLSeq{Advantage: adv[si]})
				}
				s := &out[len(out)-1]
				s.Logp = append(s.Logp, logp[r-lo])
				old := math.NaN()
				if ol := seqs[si].OldLogprobs; ol != nil {
					old = float64(ol[j])
				}
				s.Old = append(s.Old, old)
				if ref != nil {
					s.Ref = append(s.Ref, ref[r])
				}
			}
			return out
		}
		add := func(res train.RLResult) []float64 {
			sums.Loss, sums.PolicyLoss, sums.KL, sums.Ratio = sums.Loss+res.Loss, sums.PolicyLoss+res.PolicyLoss, sums.KL+res.KL, sums.Ratio+res.Ratio
			sums.Clipped += res.Clipped
			var coef []float64
			for _, c := range res.Coef {
				coef = append(coef, c...)
			}
			return coef
		}
		var st train.TokenStats
		if cfg.ImportanceSamplingLevel == "sequence" {
			// A token's gradient depends on its whole sequence's ratio: logprobs first, then the head
			// again with the gradients (one more head product, instead of holding every row's logits).
			if st, err = t.head(p, rows, targets, nil); err != nil {
				return sums, err
			}
			res, err := train.RLLoss(rlSeqs(0, len(rows), st.Logprob), cfg, float64(n))
			if err != nil {
				return sums, err
			}
			coef := add(res)
			_, err = t.head(p, rows, targets, func(lo, hi int, _ train.TokenStats) ([]float64, error) {
				return coef[lo:hi], nil
			})
			if err != nil {
				return sums, err
			}
		} else {
			// Token level: every token's gradient depends on that token alone, so one head pass suffices.
			st, err = t.head(p, rows, targets, func(lo, hi int, cst train.TokenStats) ([]float64, error) {
				res, err := train.RLLoss(rlSeqs(lo, hi, cst.Logprob), cfg, float64(n))
				if err != nil {
					return nil, err
				}
				return add(res), nil
			})
			if err != nil {
				return sums, err
			}
		}
		for _, e := range st.Entropy {
			sums.Entropy += e
		}
		if err := p.BackwardHidden(ctx, model.Grads{L: t.grads}); err != nil {
			return sums, err
		}
		sums.Flops += p.FlopsFwd + p.FlopsBwd
	}
	return sums, nil
}

// refLogprobs evaluates the trainable tokens of a micro-batch under the base model alone (adapter off).
func (t *Trainer) refLogprobs(ctx context.Context, seqs []Sequence, batch []passSeq, flops int64) ([]float64, int64, error) {
	p, err := t.forward(ctx, batch, nil, false, 0)
	if err != nil {
		return nil, flops, err
	}
	rows, targets, _ := trainRows(p, seqs, batch)
	st, err := t.head(p, rows, targets, nil)
	return st.Logprob, flops + p.FlopsFwd, err
}

// SequenceLogprobs returns, for every sequence, the logprob of each token under base + adapter (index 0,
// which has no context, is NaN). Nothing is updated.
func (t *Trainer) SequenceLogprobs(ctx context.Context, seqs []Sequence) ([][]float32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seqs = append([]Sequence(nil), seqs...) // the caller's sequences stay untouched
	for i := range seqs {                   // every position counts here, not just the trainable ones
		if len(seqs[i].Trainable) != len(seqs[i].Tokens) {
			seqs[i].Trainable = make([]bool, len(seqs[i].Tokens))
		}
	}
	if _, _, err := t.validate(seqs); err != nil {
		return nil, err
	}
	out := make([][]float32, len(seqs))
	for _, batch := range t.microBatches(seqs, false) { // every row counts: nothing to share
		p, err := t.forward(ctx, batch, t.adapter.lora, false, 0)
		if err != nil {
			return nil, err
		}
		var rows, targets []int
		for ci, ps := range batch {
			si := ps.si
			out[si] = make([]float32, len(seqs[si].Tokens))
			out[si][0] = float32(math.NaN())
			for j := 1; j < len(seqs[si].Tokens); j++ {
				rows = append(rows, p.Offsets()[ci]+j-1)
				targets = append(targets, seqs[si].Tokens[j])
			}
		}
		st, err := t.head(p, rows, targets, nil)
		if err != nil {
			return nil, err
		}
		r := 0
		for _, ps := range batch {
			for j := 1; j < len(seqs[ps.si].Tokens); j++ {
				out[ps.si][j] = float32(st.Logprob[r])
				r++
			}
		}
	}
	return out, nil
}
