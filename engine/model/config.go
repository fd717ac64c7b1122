// Package model is a Llama-family decoder computing in float32 (weight matrices stored as float32 or
// bfloat16, see Mat) with manual backpropagation: token embedding, RMSNorm,
// rotary position embedding (Hugging Face rotate-half layout, optionally with Llama 3's frequency scaling),
// causal multi-head attention with grouped KV heads (optionally with projection biases, as Qwen2, and
// per-head RMSNorm of queries and keys, as Qwen3), a SwiGLU MLP and a tied or untied output head, plus LoRA
// adapters on any of the seven linear projections. Gemma 3's variations are switched on by Config fields:
// (1 + g) norm gains, norms after each sublayer too, scaled embeddings, a GeGLU MLP, interleaved
// sliding-window and global layers with two rotary bases, its attention scale, and soft-capped attention
// scores and logits. Every matrix product goes through linalg.Sgemm (or
// SgemmBF16), batched over all tokens of a batch.
//
// Weight matrices use the PyTorch layout [out × in] (y = x·Wᵀ), so Hugging Face checkpoints load as they are.
package model

import (
	"errors"
	"fmt"
	"math"
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
	// RopeLinear is a "linear" rope_scaling factor (positions divided by it; Gemma 3 4B+ on its global
	// layers); 0 means none.
	RopeLinear float64

	// Gemma 3's features; their zero values leave the Llama/Qwen computation exactly as it is.

	// NormPlusOne stores every RMSNorm gain as an offset from one: y = x·r·(1 + g) (Gemma).
	NormPlusOne bool
	// SandwichNorm norms each sublayer's output before the residual add (Gemma's post_attention_layernorm
	// and post_feedforward_layernorm; its pre-MLP norm is then pre_feedforward_layernorm).
	SandwichNorm bool
	// EmbedScale multiplies the embeddings by √Dim (the head still uses them unscaled when tied).
	EmbedScale bool
	// GeluTanh makes the MLP gelu_tanh(gate)·up (GeGLU, hidden_activation gelu_pytorch_tanh) instead of
	// silu(gate)·up.
	GeluTanh bool
	// QueryScalar sets the attention scale to QueryScalar^-½ (query_pre_attn_scalar); 0 means HeadDim.
	QueryScalar float64
	// AttnSoftcap and FinalSoftcap cap attention scores and output logits as c·tanh(x/c); 0 means none.
	AttnSoftcap, FinalSoftcap float32
	// SlidingPattern > 0 interleaves local and global layers: layer l is global when (l+1) is a multiple of
	// it, local otherwise. A local layer rotates with RopeLocalTheta (no scaling) and, when SlidingWindow
	// > 0, a position i attends only to positions j with i − j < SlidingWindow.
	SlidingPattern int
	SlidingWindow  int
	RopeLocalTheta float64
}

// Local reports whether layer l is a local (sliding-window) layer.
func (c Config) Local(l int) bool { return c.SlidingPattern > 0 && (l+1)%c.SlidingPattern != 0 }

// window is the number of positions a query of layer l attends to, up to and including its own (0: all).
func (c Config) window(l int) int {
	if c.Local(l) {
		return c.SlidingWindow
	}
	return 0
}

// localRope is the configuration local layers' rotary table is built from: RopeLocalTheta, unscaled.
func (c Config) localRope() Config {
	c.RopeTheta, c.RopeLinear, c.Rope3 = c.RopeLocalTheta, 0, Llama3Rope{}
	return c
}

// attnScale multiplies the query·key products before the softmax.
func (c Config) attnScale() float32 {
	if c.QueryScalar > 0 {
		return float32(1 / math.Sqrt(c.QueryScalar))
	}
	return float32(1 / math.Sqrt(float64(c.HeadDim)))
}

// embedScale multiplies the embeddings (√Dim in float32 with EmbedScale: the normaliser Gemma computes in
// the model's dtype, float32 here).
func (c Config) embedScale() float32 {
	if c.EmbedScale {
		return float32(math.Sqrt(float64(c.Dim)))
	}
	return 1
}

// normOffset is what every norm gain is stored relative to.
func (c Config) normOffset() float32 {
	if c.NormPlusOne {
		return 1
	}
	return 0
}

// layerNorms is the number of RMSNorms of Dim gains in a layer.
func (c Config) layerNorms() int {
	if c.SandwichNorm {
		return 4
	}
	return 2
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
	case c.RopeLinear < 0 || c.QueryScalar < 0 || c.AttnSoftcap < 0 || c.FinalSoftcap < 0 || c.SlidingWindow < 0 ||
		c.SlidingPattern < 0:
		return fmt.Errorf("%w: rope_scaling factor, query_pre_attn_scalar, softcapping, sliding_window and "+
			"its pattern must not be negative", ErrConfig)
	case c.SlidingPattern > 0 && c.RopeLocalTheta <= 0:
		return fmt.Errorf("%w: rope_local_base_freq must be positive", ErrConfig)
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
	return n + c.layerNorms()*c.Layers*c.Dim
}

// WeightBytes is the memory Weights of this shape take with matrices stored as dtype (norm gains and biases
// are float32 either way), without allocating them: for memory estimates before loading.
func (c Config) WeightBytes(dtype DType) int64 {
	vectors := int64(c.Dim + c.layerNorms()*c.Layers*c.Dim)
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
