package model

import "github.com/trainyard/trainyard/engine/linalg"

// The output head in pieces. A [tokens × vocab] logit matrix is the largest thing a step could hold
// (4,096 tokens × Qwen's 151,936 ids = 2.5 GB), so callers evaluate it a chunk of rows at a time
// (LogitsInto), turn each chunk into its loss gradient, hand that to AddHeadGrad and drop the chunk; the
// gradient w.r.t. the final hidden states accumulates in the pass until BackwardHidden.

// Logits returns [len(rows) × vocab] logits for the given rows.
func (p *Pass) Logits(rows []int) []float32 {
	return p.LogitsInto(make([]float32, len(rows)*p.w.Cfg.VocabSize), rows)
}

// LogitsInto writes the logits of rows into out (at least len(rows) × vocab floats) and returns them.
func (p *Pass) LogitsInto(out []float32, rows []int) []float32 {
	c := p.w.Cfg
	out = out[:len(rows)*c.VocabSize]
	p.w.Output.mulTPass(p.team, p.decode != nil, len(rows), p.gather(rows), 0, out)
	p.FlopsFwd += int64(2 * len(rows) * c.VocabSize * c.Dim)
	if c.FinalSoftcap > 0 {
		finalSoftcap(out, c.FinalSoftcap)
	}
	return out
}

// finalSoftcap caps logits as c·tanh(x/c) = c·(2σ(2x/c) − 1), through the vectorised sigmoid: a row has a
// vocabulary of them.
func finalSoftcap(out []float32, c float32) {
	const chunk = 1 << 14
	linalg.ParallelRows((len(out)+chunk-1)/chunk, len(out)*8, func(lo, hi int) {
		x := out[lo*chunk : min(hi*chunk, len(out))]
		linalg.Scale(2/c, x)
		linalg.Sigmoid(x, x)
		for i, s := range x {
			x[i] = c * (2*s - 1)
		}
	})
}

// AddHeadGrad back-propagates dLogits ([len(rows) × vocab], the loss gradient w.r.t. those rows' logits)
// through the head: it adds dLogits·Output to the pass's gradient w.r.t. the final hidden states (for
// BackwardHidden) and, when g.W is set, dLogitsᵀ·h to the output weights' gradient. Rows may repeat across
// calls; their contributions add up. With Config.FinalSoftcap, dLogits is w.r.t. the capped logits, and
// the rows' logits are computed again for the cap's derivative.
func (p *Pass) AddHeadGrad(rows []int, dLogits []float32, g Grads) {
	c := p.w.Cfg
	R, D, V := len(rows), c.Dim, c.VocabSize
	if R == 0 {
		return
	}
	if c.FinalSoftcap > 0 {
		capped := p.LogitsInto(make([]float32, R*V), rows)
		for i, y := range capped {
			t := y / c.FinalSoftcap
			capped[i] = dLogits[i] * (1 - t*t)
		}
		dLogits = capped
	}
	dh := make([]float32, R*D)
	p.w.Output.Mul(R, dLogits, 0, dh)
	p.FlopsBwd += int64(2 * R * D * V)
	if g.W != nil {
		linalg.Sgemm(true, false, V, D, R, 1, dLogits, V, p.gather(rows), D, 1, g.W.Output.F32, D)
		p.FlopsBwd += int64(2 * R * D * V)
	}
	dhf := p.hiddenGrad()
	for i, r := range rows {
		linalg.Axpy(1, dh[i*D:(i+1)*D], dhf[r*D:(r+1)*D])
	}
}

// hiddenGrad is the gradient w.r.t. the final hidden states, zero until AddHeadGrad adds to it.
func (p *Pass) hiddenGrad() []float32 {
	if p.dhf == nil {
		p.dhf = p.opt.Arena.alloc(p.N * p.w.Cfg.Dim)
	}
	return p.dhf
}

// gather copies the final hidden states of rows into a new [len(rows) × dim] matrix.
func (p *Pass) gather(rows []int) []float32 {
	D := p.w.Cfg.Dim
	h := make([]float32, len(rows)*D)
	for i, r := range rows {
		copy(h[i*D:(i+1)*D], p.hf[r*D:(r+1)*D])
	}
	return h
}
