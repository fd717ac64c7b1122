// Package train holds the engine's training math: token log-probabilities and their gradients, the SFT
// cross-entropy and RL policy-gradient losses (PPO and CISPO with group-relative advantages), AdamW with
// global-norm gradient clipping, and learning-rate schedules. It works on logits and parameter slices and
// knows nothing of the model's layers.
package train

import (
	"errors"
	"math"
	"sync"

	"github.com/trainyard/trainyard/engine/linalg"
)

// ErrNonFinite reports a NaN or infinite loss or gradient; the step is not applied.
var ErrNonFinite = errors.New("non-finite loss or gradient")

// TokenStats are per-row results of a softmax over the vocabulary.
type TokenStats struct {
	Logprob []float64 // log p(target)
	Entropy []float64 // −Σ p log p
	// LogSum is each row's log Σ exp(logit), which LogprobGrad takes on the same logits instead of
	// finding the row's maximum again (one more pass over 150,000 logits a row, from memory).
	LogSum []float32
}

// Stats computes log p(target) and the entropy of every row of logits ([rows × V]), rows in parallel.
func Stats(logits []float32, V int, targets []int) TokenStats {
	n := len(targets)
	st := TokenStats{Logprob: make([]float64, n), Entropy: make([]float64, n), LogSum: make([]float32, n)}
	linalg.ParallelRows(n, n*V*12, func(lo, hi int) {
		buf := getScratch(V)
		defer scratch.Put(buf)
		for i := lo; i < hi; i++ {
			row := logits[i*V : (i+1)*V]
			st.Logprob[i], st.Entropy[i], st.LogSum[i] = rowStats(row, targets[i], *buf)
		}
	})
	return st
}

// scratch pools the exponentials of Stats' workers (vocab floats each): callers
// evaluate the head a chunk of rows at a time, and fresh buffers per chunk and worker would leave megabytes
// of garbage per chunk at a 150k vocabulary.
var scratch sync.Pool

func getScratch(n int) *[]float32 {
	if b, ok := scratch.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}

// rowStats returns log p(target), the entropy −Σ p log p and log Σ exp(x) of one row of logits x, through
// the shifted logits d = x − max(x) and e = exp(d) (vectorised exp, into e): log p_j = d_j − log Σe, and the
// entropy is log Σe − Σ e·d / Σe, both formed from shifted values so a peaked distribution loses no
// precision. d is never written: ExpSum and DotShift shift x as they read it, into the same float32 values.
// (Σ e·x − max·Σe would need no shift at all, at 40 times the entropy's error on a row shifted by 30.)
func rowStats(x []float32, target int, e []float32) (logp, entropy float64, logSum float32) {
	mx := linalg.Max(x)
	e = e[:len(x)]
	sum := float64(linalg.ExpSum(e, x, mx))
	ls := math.Log(sum)
	return float64(x[target]-mx) - ls, ls - float64(linalg.DotShift(e, x, mx))/sum, mx + float32(ls)
}

// LogprobGrad overwrites logits with the gradient of Σ_i coef[i]·log p_i(target_i) w.r.t. the logits:
// coef[i]·(onehot(target_i) − softmax(row_i)). Every loss here is a function of target log-probabilities,
// so its logit gradient is this with coef = ∂loss/∂logp. Rows run in parallel. logSum is Stats' LogSum of
// the same logits: softmax(row) = exp(row − logSum), without finding the row's maximum again.
func LogprobGrad(logits []float32, V int, targets []int, coef []float64, logSum []float32) {
	linalg.ParallelRows(len(targets), len(targets)*V*8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := logits[i*V : (i+1)*V]
			c := coef[i]
			linalg.ExpSum(row, row, logSum[i])
			linalg.Scale(float32(-c), row)
			row[targets[i]] += float32(c)
		}
	})
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
