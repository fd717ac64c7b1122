package train

import (
	"fmt"
	"math"
)

// RLConfig selects the policy-gradient objective.
type RLConfig struct {
	LossFn                  string  // "cispo" (default) or "ppo"
	Epsilon                 float32 // lower clip: ratio ≥ 1 − Epsilon (0 = default for the loss)
	EpsilonHigh             float32 // upper clip: ratio ≤ 1 + EpsilonHigh (0 = Epsilon for ppo, default for cispo)
	ImportanceSamplingLevel string  // "token" (default) or "sequence"
	KLPenaltyCoef           float32 // β of the KL penalty to the reference (base) model; 0 = off
}

// Normalize fills defaults and validates: ppo ε = 0.2, ε_high = ε; cispo ε = 1 (no lower bound besides 0),
// ε_high = 4.
func (c RLConfig) Normalize() (RLConfig, error) {
	if c.LossFn == "" {
		c.LossFn = "cispo"
	}
	if c.ImportanceSamplingLevel == "" {
		c.ImportanceSamplingLevel = "token"
	}
	switch c.LossFn {
	case "ppo":
		if c.Epsilon == 0 {
			c.Epsilon = 0.2
		}
		if c.EpsilonHigh == 0 {
			c.EpsilonHigh = c.Epsilon
		}
	case "cispo":
		if c.Epsilon == 0 {
			c.Epsilon = 1
		}
		if c.EpsilonHigh == 0 {
			c.EpsilonHigh = 4
		}
	default:
		return c, fmt.Errorf("unknown loss_fn %q (want cispo or ppo)", c.LossFn)
	}
	if c.ImportanceSamplingLevel != "token" && c.ImportanceSamplingLevel != "sequence" {
		return c, fmt.Errorf("unknown importance_sampling_level %q (want token or sequence)", c.ImportanceSamplingLevel)
	}
	if c.Epsilon < 0 || c.EpsilonHigh < 0 || c.KLPenaltyCoef < 0 {
		return c, fmt.Errorf("epsilon, epsilon_high and kl_penalty_coef must be non-negative")
	}
	return c, nil
}

// RLSeq is one sampled completion's trainable tokens: current logprobs, sampling-time logprobs (NaN =
// unknown: treated as on-policy, ratio 1), reference logprobs (used only with a KL penalty) and the
// sequence's advantage.
type RLSeq struct {
	Logp, Old, Ref []float64
	Advantage      float64
}

// RLResult holds sums over the tokens of one call (divide by the batch's token count for means) and the
// gradient of the normalised loss w.r.t. every token logprob (Coef, shaped like the inputs).
type RLResult struct {
	Loss, PolicyLoss, KL, Ratio float64 // sums over tokens
	Clipped, Tokens             int
	Coef                        [][]float64
}

// RLLoss computes the policy-gradient loss, averaged over all trainable tokens of the batch (N tokens):
//
//	ρ_t = exp(logp_t − old_t)                         (token level)
//	ρ_t = exp(mean_s(logp − old))  for every t of s   (sequence level, a geometric mean per sequence)
//	ppo:   L_t = −min(ρ_t·A, clip(ρ_t, 1−ε, 1+ε_h)·A)
//	cispo: L_t = −sg(clip(ρ_t, 1−ε, 1+ε_h))·A·logp_t  (sg = stop-gradient: the clipped weight only scales)
//	KL:    L_t += β·(exp(ref_t − logp_t) − (ref_t − logp_t) − 1)  (the k3 estimator of KL(π‖π_ref))
//	loss = Σ_t L_t / norm    (norm = number of trainable tokens in the whole batch, so micro-batches add up)
//
// Gradients: ppo contributes −A·ρ_t when the unclipped branch is the minimum (also at sequence level,
// where ∂ρ/∂logp_t = ρ/T and the T tokens sharing ρ sum back to −A·ρ), else 0; cispo −A·clip(ρ_t);
// the KL term β·(1 − exp(ref_t − logp_t)).
func RLLoss(seqs []RLSeq, cfg RLConfig, norm float64) (RLResult, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return RLResult{}, err
	}
	res := RLResult{Coef: make([][]float64, len(seqs))}
	if norm <= 0 {
		return res, fmt.Errorf("rl loss normaliser %v must be positive", norm)
	}
	lo, hi := 1-float64(cfg.Epsilon), 1+float64(cfg.EpsilonHigh)
	beta := float64(cfg.KLPenaltyCoef)
	for si, s := range seqs {
		res.Coef[si] = make([]float64, len(s.Logp))
		A := s.Advantage
		seqRatio := 0.0
		if cfg.ImportanceSamplingLevel == "sequence" {
			var d float64
			for t, lp := range s.Logp {
				d += lp - oldOr(s.Old, t, lp)
			}
			seqRatio = math.Exp(d / float64(len(s.Logp)))
		}
		for t, lp := range s.Logp {
			ratio := seqRatio
			if cfg.ImportanceSamplingLevel == "token" {
				ratio = math.Exp(lp - oldOr(s.Old, t, lp))
			}
			res.Ratio += ratio
			res.Tokens++
			cr := math.Min(math.Max(ratio, lo), hi)
			if cr != ratio {
				res.Clipped++
			}
			var l, c float64
			if cfg.LossFn == "ppo" {
				unclipped, clip := ratio*A, cr*A
				l = -math.Min(unclipped, clip)
				if unclipped <= clip {
					c = -A * ratio
				}
			} else {
				l = -cr * A * lp
				c = -cr * A
			}
			res.PolicyLoss += l
			if beta > 0 {
				d := s.Ref[t] - lp
				k := math.Exp(d) - d - 1
				res.KL += k
				l += beta * k
				c += beta * (1 - math.Exp(d))
			}
			res.Loss += l
			res.Coef[si][t] = c / norm
		}
	}
	if !finite(res.Loss) {
		return res, fmt.Errorf("%w: rl loss %v", ErrNonFinite, res.Loss)
	}
	return res, nil
}

func oldOr(old []float64, t int, cur float64) float64 {
	if old == nil || t >= len(old) || math.IsNaN(old[t]) {
		return cur
	}
	return old[t]
}
