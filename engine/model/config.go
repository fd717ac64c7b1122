// Package model is a Llama-family decoder computing in float32 (weight matrices stored as float32 or
// bfloat16, see Mat) with manual backpropagation: token embedding, RMSNorm,
// rotary position embedding (Hugging Face rotate-half layout, optionally with Llama 3's frequency scaling),
// causal multi-head attention with grouped KV heads (optionally with projection biases, as Qwen2, and
// per-head RMSNorm of queries and keys, as Qwen3), a SwiGLU MLP and a tied or untied output head, plus LoRA
// adapters on any of the seven linear projections. Every matrix product goes through linalg.Sgemm (or
// SgemmBF16), batched over all tokens of a batch.
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
	// Arch is the Hugging Face model_type the config came from ("llama", "qwen2", "qwen3"; "" is llama).
	Arch string
	// Bias marks the projections that add a bias vector (Qwen2: q, k, v; Llama's attention_bias: q, k, v,
	// o; mlp_bias: gate, up, down).
	Bias [NumModules]bool
	// QKNorm applies an RMSNorm with its own gain over each head of the queries and keys, before RoPE
	// (Qwen3).
	QKNorm bool
	// Rope3 is Llama 3's rope_scaling; a zero Factor means none.
	Rope3 Llama3Rope
}

// Llama3Rope is the "llama3" rope_scaling of Llama 3.1+: wavelengths longer than OrigMaxPos/LowFreqFactor
// are stretched by Factor, shorter than OrigMaxPos/HighFreqFactor kept, and those between interpolated.
type Llama3Rope struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OrigMaxPos                            int
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
	case c.Rope3 != (Llama3Rope{}) && (c.Rope3.Factor <= 0 || c.Rope3.OrigMaxPos <= 0 || c.Rope3.LowFreqFactor <= 0 ||
		c.Rope3.HighFreqFactor <= c.Rope3.LowFreqFactor):
		return fmt.Errorf("%w: llama3 rope_scaling %+v needs positive factor and original_max_position_embeddings "+
			"and high_freq_factor > low_freq_factor > 0", ErrConfig, c.Rope3)
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
		if c.Bias[m] {
			n += c.Layers * o
		}
	}
	if c.QKNorm {
		n += 2 * c.Layers * c.HeadDim
	}
	return n + 2*c.Layers*c.Dim
}

// WeightBytes is the memory Weights of this shape take with matrices stored as dtype (norm gains and biases
// are float32 either way), without allocating them: for memory estimates before loading.
func (c Config) WeightBytes(dtype DType) int64 {
	vectors := int64(c.Dim + 2*c.Layers*c.Dim)
	if c.QKNorm {
		vectors += int64(2 * c.Layers * c.HeadDim)
	}
	for m := 0; m < NumModules; m++ {
		if c.Bias[m] {
			o, _ := c.Shape(m)
			vectors += int64(c.Layers * o)
		}
	}
	matrices := int64(c.NumParams()) - vectors
	size := int64(4)
	if dtype == BF16 {
		size = 2
	}
	return matrices*size + vectors*4
}
