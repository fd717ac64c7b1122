package train

import (
	"fmt"
	"math"
)

// AdamW configures one optimizer step. Defaults (DefaultAdamW) follow PyTorch except weight decay 0, the
// usual choice for LoRA.
type AdamW struct {
	LearningRate float32
	Beta1, Beta2 float32
	Eps          float32
	WeightDecay  float32
	MaxGradNorm  float32 // clip the global gradient norm to this value; 0 = no clipping
}

// DefaultAdamW returns lr 1e-4, β=(0.9, 0.999), ε=1e-8, no weight decay, clipping at 1.
func DefaultAdamW() AdamW {
	return AdamW{LearningRate: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MaxGradNorm: 1}
}

// Validate rejects settings that cannot make a sane step.
func (c AdamW) Validate() error {
	ok := c.LearningRate >= 0 && c.Beta1 >= 0 && c.Beta1 < 1 && c.Beta2 >= 0 && c.Beta2 < 1 && c.Eps > 0 &&
		c.WeightDecay >= 0 && c.MaxGradNorm >= 0 && finite(float64(c.LearningRate))
	if !ok {
		return fmt.Errorf("invalid AdamW config %+v", c)
	}
	return nil
}

// AdamState holds the first and second moments of every parameter tensor and the step count; resuming
// from a saved state continues bit-for-bit as if training had not stopped.
type AdamState struct {
	Step int64
	M, V [][]float32
}

// NewAdamState returns zero moments shaped like params.
func NewAdamState(params [][]float32) *AdamState {
	s := &AdamState{M: make([][]float32, len(params)), V: make([][]float32, len(params))}
	for i, p := range params {
		s.M[i] = make([]float32, len(p))
		s.V[i] = make([]float32, len(p))
	}
	return s
}

// GradNorm returns the global L2 norm of grads.
func GradNorm(grads [][]float32) float64 {
	var ss float64
	for _, g := range grads {
		for _, v := range g {
			ss += float64(v) * float64(v)
		}
	}
	return math.Sqrt(ss)
}

// Update clips grads to cfg.MaxGradNorm (scaling all by max/norm when the global norm exceeds it) and
// applies one AdamW step to params:
//
//	m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²
//	p ← p − lr·( m/(1−β1ᵗ) / (sqrt(v/(1−β2ᵗ)) + ε) + wd·p )
//
// It returns the pre-clipping gradient norm. A non-finite norm returns ErrNonFinite and changes nothing.
func (s *AdamState) Update(params, grads [][]float32, cfg AdamW) (float64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if len(params) != len(s.M) || len(grads) != len(params) {
		return 0, fmt.Errorf("optimizer state has %d tensors, got %d params and %d grads", len(s.M), len(params), len(grads))
	}
	norm := GradNorm(grads)
	if !finite(norm) {
		return norm, fmt.Errorf("%w: gradient norm %v", ErrNonFinite, norm)
	}
	clip := float32(1)
	if cfg.MaxGradNorm > 0 && norm > float64(cfg.MaxGradNorm) {
		clip = float32(float64(cfg.MaxGradNorm) / norm)
	}
	s.Step++
	bc1 := float32(1 - math.Pow(float64(cfg.Beta1), float64(s.Step)))
	bc2 := float32(1 - math.Pow(float64(cfg.Beta2), float64(s.Step)))
	lr, b1, b2, eps, wd := cfg.LearningRate, cfg.Beta1, cfg.Beta2, cfg.Eps, cfg.WeightDecay
	for i, p := range params {
		m, v, g := s.M[i], s.V[i], grads[i]
		for j := range p {
			gj := g[j] * clip
			m[j] = b1*m[j] + (1-b1)*gj
			v[j] = b2*v[j] + (1-b2)*gj*gj
			mh := m[j] / bc1
			vh := v[j] / bc2
			p[j] -= lr * (mh/(float32(math.Sqrt(float64(vh)))+eps) + wd*p[j])
		}
	}
	return norm, nil
}

// ScheduleLR returns rates[step] for a per-step schedule (the last rate repeats past its end), or def when
// rates is empty (a constant schedule).
func ScheduleLR(rates []float32, step int, def float32) float32 {
	switch {
	case len(rates) == 0:
		return def
	case step < len(rates):
		return rates[step]
	}
	return rates[len(rates)-1]
}
