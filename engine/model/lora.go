package model

import (
	"fmt"
	"math"
	"math/rand"
)

// LoRA is a low-rank adapter: projection m of layer l computes y = x·Wᵀ + (α/r)·(drop(x)·Aᵀ)·Bᵀ with
// A [r × in] and B [out × r]. Only targeted modules have A and B (nil otherwise).
type LoRA struct {
	Rank    int
	Alpha   float32
	Dropout float32
	Targets [NumModules]bool
	A, B    [][NumModules][]float32 // per layer
}

// NewLoRA allocates an adapter for cfg; A is drawn like PEFT's default (Kaiming-uniform, bound 1/sqrt(in))
// and B is zero, so a new adapter leaves the model unchanged.
func NewLoRA(cfg Config, rank int, alpha, dropout float32, targets [NumModules]bool, seed int64) (*LoRA, error) {
	if rank <= 0 || alpha <= 0 || dropout < 0 || dropout >= 1 {
		return nil, fmt.Errorf("%w: lora rank %d, alpha %g, dropout %g", ErrConfig, rank, alpha, dropout)
	}
	a := &LoRA{Rank: rank, Alpha: alpha, Dropout: dropout, Targets: targets,
		A: make([][NumModules][]float32, cfg.Layers), B: make([][NumModules][]float32, cfg.Layers)}
	rng := rand.New(rand.NewSource(seed))
	for l := 0; l < cfg.Layers; l++ {
		for m := 0; m < NumModules; m++ {
			if !targets[m] {
				continue
			}
			out, in := cfg.Shape(m)
			a.A[l][m] = make([]float32, rank*in)
			a.B[l][m] = make([]float32, out*rank)
			bound := 1 / math.Sqrt(float64(in))
			for i := range a.A[l][m] {
				a.A[l][m][i] = float32((rng.Float64()*2 - 1) * bound)
			}
		}
	}
	return a, nil
}

// Scale is α/r.
func (a *LoRA) Scale() float32 { return a.Alpha / float32(a.Rank) }

// Tensors lists the adapter's matrices under their PEFT names
// ("base_model.model.model.layers.{l}.self_attn.q_proj.lora_A.weight", ...), in a fixed order.
func (a *LoRA) Tensors(cfg Config) []Tensor {
	var ts []Tensor
	for l := range a.A {
		for m := 0; m < NumModules; m++ {
			if !a.Targets[m] {
				continue
			}
			out, in := cfg.Shape(m)
			p := fmt.Sprintf("base_model.model.model.layers.%d.%s.", l, modulePath(m))
			ts = append(ts, Tensor{Name: p + "lora_A.weight", Shape: []int{a.Rank, in}, Data: a.A[l][m]},
				Tensor{Name: p + "lora_B.weight", Shape: []int{out, a.Rank}, Data: a.B[l][m]})
		}
	}
	return ts
}

// ZeroLike returns an adapter of the same shape with all-zero matrices (gradient buffers).
func (a *LoRA) ZeroLike() *LoRA {
	z := &LoRA{Rank: a.Rank, Alpha: a.Alpha, Dropout: a.Dropout, Targets: a.Targets,
		A: make([][NumModules][]float32, len(a.A)), B: make([][NumModules][]float32, len(a.B))}
	for l := range a.A {
		for m := 0; m < NumModules; m++ {
			if a.A[l][m] != nil {
				z.A[l][m] = make([]float32, len(a.A[l][m]))
				z.B[l][m] = make([]float32, len(a.B[l][m]))
			}
		}
	}
	return z
}

// Clone returns a deep copy.
func (a *LoRA) Clone() *LoRA {
	c := a.ZeroLike()
	for l := range a.A {
		for m := 0; m < NumModules; m++ {
			copy(c.A[l][m], a.A[l][m])
			copy(c.B[l][m], a.B[l][m])
		}
	}
	return c
}
