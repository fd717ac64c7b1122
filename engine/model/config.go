// Package model is a Llama-family decoder in float32 with manual backpropagation: token embedding, RMSNorm,
// rotary position embedding (Hugging Face rotate-half layout), causal multi-head attention with grouped KV
// heads, a SwiGLU MLP and a tied or untied output head, plus LoRA adapters on any of the seven linear
// projections. Every matrix product goes through linalg.Sgemm, batched over all tokens of a batch.
//
// Weight matrices use the PyTorch layout [out × in] (y = x·Wᵀ), so Hugging Face checkpoints load as they are.
package model

import (
	"errors"
	"fmt"
)

// ErrConfig reports an inconsistent model configuration.
var ErrConfig = errors.New("invalid model config")

// Config describes the architecture.
type Config struct {
	VocabSize      int
	Dim            int // residual width (hidden_size)
	Layers         int
	Heads          int
	KVHeads        int // grouped-query attention: Heads must be a multiple
	HeadDim        int
	Hidden         int // MLP width (intermediate_size)
	MaxSeqLen      int
	RopeTheta      float64
	NormEps        float32
	TiedEmbeddings bool
}

// Linear projections of a layer, in the order used by every per-module array.
const (
	ModQ = iota
	ModK
	ModV
	ModO
	ModGate
	ModUp
	ModDown
	NumModules
)

// ModuleNames are the PEFT/Hugging Face short names of the projections, indexed by Mod*.
var ModuleNames = [NumModules]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.VocabSize <= 0 || c.Dim <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.Hidden <= 0 || c.MaxSeqLen <= 0:
		return fmt.Errorf("%w: sizes must be positive: %+v", ErrConfig, c)
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("%w: %d heads not a multiple of %d kv heads", ErrConfig, c.Heads, c.KVHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return fmt.Errorf("%w: head dim %d must be even and positive", ErrConfig, c.HeadDim)
	case c.RopeTheta <= 0 || c.NormEps <= 0:
		return fmt.Errorf("%w: rope theta and norm eps must be positive", ErrConfig)
	}
	return nil
}

// QDim is the width of the concatenated query heads.
func (c Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of the concatenated key (or value) heads.
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// Shape returns (out, in) of projection mod.
func (c Config) Shape(mod int) (out, in int) {
	switch mod {
	case ModQ:
		return c.QDim(), c.Dim
	case ModK, ModV:
		return c.KVDim(), c.Dim
	case ModO:
		return c.Dim, c.QDim()
	case ModGate, ModUp:
		return c.Hidden, c.Dim
	default:
		return c.Dim, c.Hidden
	}
}

// NumParams counts the model's parameters (the tied head counted once).
func (c Config) NumParams() int {
	n := c.VocabSize*c.Dim + c.Dim
	if !c.TiedEmbeddings {
		n += c.VocabSize * c.Dim
	}
	for m := 0; m < NumModules; m++ {
		o, i := c.Shape(m)
		n += c.Layers * o * i
	}
	return n + 2*c.Layers*c.Dim
}
