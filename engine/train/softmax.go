// Package train holds the engine's training math: token log-probabilities and their gradients, the SFT
// cross-entropy and RL policy-gradient losses (PPO and CISPO with group-relative advantages), AdamW with
// global-norm gradient clipping, and learning-rate schedules. It works on logits and parameter slices and
// knows nothing of the model's layers.
package train

import (
	"errors"
	"math"
)

// ErrNonFinite reports a NaN or infinite loss or gradient; the step is not applied.
var ErrNonFinite = errors.New("non-finite loss or gradient")

// TokenStats are per-row results of a softmax over the vocabulary.
type TokenStats struct {
	Logprob []float64 // log p(target)
	Entropy []float64 // −Σ p log p
}

// Stats computes log p(target) and the entropy of every row of logits ([rows × V]).
func Stats(logits []float32, V int, targets []int) TokenStats {
	st := TokenStats{Logprob: make([]float64, len(targets)), Entropy: make([]float64, len(targets))}
	for i, tg := range targets {
		row := logits[i*V : (i+1)*V]
		lse := logSumExp(row)
		var ent float64
		for _, v := range row {
			lp := float64(v) - lse
			ent -= math.Exp(lp) * lp
		}
		st.Logprob[i] = float64(row[tg]) - lse
		st.Entropy[i] = ent
	}
	return st
}

func logSumExp(row []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}

// LogprobGrad overwrites logits with the gradient of Σ_i coef[i]·log p_i(target_i) w.r.t. the logits:
// coef[i]·(onehot(target_i) − softmax(row_i)). Every loss here is a function of target log-probabilities,
// so its logit gradient is this with coef = ∂loss/∂logp.
func LogprobGrad(logits []float32, V int, targets []int, coef []float64) {
	for i, tg := range targets {
		row := logits[i*V : (i+1)*V]
		lse := logSumExp(row)
		c := coef[i]
		for j, v := range row {
			row[j] = float32(-c * math.Exp(float64(v)-lse))
		}
		row[tg] += float32(c)
	}
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
