package model

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/trainyard/trainyard/engine/linalg"
)

// Layer holds one decoder block's weights.
type Layer struct {
	AttnNorm []float32
	MLPNorm  []float32
	W        [NumModules]Mat       // [out × in] per projection
	Bias     [NumModules][]float32 // [out], for the projections Config.Bias marks (nil otherwise)
	QNorm    []float32             // [headDim] gains of the per-head query and key norms (Config.QKNorm)
	KNorm    []float32
	// PostAttnNorm and PostMLPNorm norm the sublayers' outputs (Config.SandwichNorm; nil otherwise).
	PostAttnNorm, PostMLPNorm []float32
	// qkv and gateUp are, once Pack has run, q, k and v's pair layouts as one matrix, and gate and up's
	// (linalg.FusePairs; nil where they do not fuse): a decoding step multiplies each set in one product
	// (Pass.linearsFused). Each projection's own matrix is its part of them, so they cost no memory.
	qkv, gateUp *linalg.PackedPairs
}

// Weights are the model's parameters. With tied embeddings Output aliases Embed. The matrices are float32 or
// bfloat16 (DType); vectors (norm gains, biases) are always float32.
type Weights struct {
	Cfg       Config
	Embed     Mat // [vocab × dim]
	Layers    []Layer
	FinalNorm []float32
	Output    Mat // [vocab × dim]
	rope      *ropeTable
	ropeLocal *ropeTable // local layers' (Config.SlidingPattern), nil otherwise
	// noRowMajor: after Pack no matrix keeps a row-major bfloat16 copy (every one is in the pair layout, or
	// in packed panels where those serve every row count: AVX2), so no product of a decoding step of one
	// sequence goes through a Team (linalg.GemvBF16T, which reads that copy). A Team's partner would only
	// spin on the second core, keeping the helpers that split the packed products off it: on AVX2 a
	// decoding step of one sequence ran on one core and a half, 22 ms a token at SmolLM2-135M's shape.
	noRowMajor bool
}

// ropeOf is the rotary table of layer l.
func (w *Weights) ropeOf(l int) *ropeTable {
	if w.Cfg.Local(l) {
		return w.ropeLocal
	}
	return w.rope
}

// NewWeights allocates zeroed float32 weights (norm gains zero too; see Init) for cfg: the storage for
// pretraining, full-weight gradients and tests.
func NewWeights(cfg Config) (*Weights, error) { return newWeights(cfg, F32) }

func newWeights(cfg Config, dtype DType) (*Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if dtype != F32 && dtype != BF16 {
		return nil, fmt.Errorf("%w: weight dtype %q", ErrConfig, dtype)
	}
	w := &Weights{Cfg: cfg, Embed: newMat(cfg.VocabSize, cfg.Dim, dtype),
		Layers: make([]Layer, cfg.Layers), FinalNorm: make([]float32, cfg.Dim)}
	for l := range w.Layers {
		w.Layers[l].AttnNorm = make([]float32, cfg.Dim)
		w.Layers[l].MLPNorm = make([]float32, cfg.Dim)
		for m := 0; m < NumModules; m++ {
			o, i := cfg.Shape(m)
			w.Layers[l].W[m] = newMat(o, i, dtype)
			if cfg.Bias[m] {
				w.Layers[l].Bias[m] = make([]float32, o)
			}
		}
		if cfg.QKNorm {
			w.Layers[l].QNorm = make([]float32, cfg.HeadDim)
			w.Layers[l].KNorm = make([]float32, cfg.HeadDim)
		}
		if cfg.SandwichNorm {
			w.Layers[l].PostAttnNorm = make([]float32, cfg.Dim)
			w.Layers[l].PostMLPNorm = make([]float32, cfg.Dim)
		}
	}
	if cfg.TiedEmbeddings {
		w.Output = w.Embed
	} else {
		w.Output = newMat(cfg.VocabSize, cfg.Dim, dtype)
	}
	w.rope = newRopeTable(cfg)
	if cfg.SlidingPattern > 0 {
		w.ropeLocal = newRopeTable(cfg.localRope())
	}
	return w, nil
}

// DType is the storage of the weight matrices.
func (w *Weights) DType() DType {
	if w.Embed.BF16 != nil || w.Embed.packed != nil || w.Embed.pairs != nil {
		return BF16
	}
	return F32
}

// Bytes is the memory the parameters take (the tied head counted once).
func (w *Weights) Bytes() int64 {
	var n int64
	for _, t := range w.Tensors() {
		n += int64(len(t.Data))*4 + int64(len(t.BF16))*2
	}
	return n
}

// ToBF16 returns a copy of w with its matrices rounded to bfloat16 (the vectors copied as they are).
func (w *Weights) ToBF16() *Weights {
	c, _ := newWeights(w.Cfg, BF16)
	src, dst := w.Tensors(), c.Tensors()
	for i, t := range src {
		switch {
		case dst[i].BF16 == nil:
			copy(dst[i].Data, t.Data)
		case t.BF16 != nil:
			copy(dst[i].BF16, t.BF16)
		default:
			dst[i].mat.set(t.Data)
		}
	}
	return c
}

// Init fills float32 weights for pretraining: N(0, 0.02) matrices, output projections (o, down) scaled down
// by 1/sqrt(2·layers) as in GPT-2, unit norm gains, zero biases.
func (w *Weights) Init(seed int64) {
	rng := rand.New(rand.NewSource(seed))
	normal := func(x []float32, std float64) {
		for i := range x {
			x[i] = float32(rng.NormFloat64() * std)
		}
	}
	ones := func(x []float32) {
		if w.Cfg.NormPlusOne {
			clear(x)
			return
		}
		for i := range x {
			x[i] = 1
		}
	}
	normal(w.Embed.F32, 0.02)
	for l := range w.Layers {
		ones(w.Layers[l].AttnNorm)
		ones(w.Layers[l].MLPNorm)
		ones(w.Layers[l].QNorm)
		ones(w.Layers[l].KNorm)
		ones(w.Layers[l].PostAttnNorm)
		ones(w.Layers[l].PostMLPNorm)
		for m := range w.Layers[l].Bias {
			clear(w.Layers[l].Bias[m])
		}
		for m := 0; m < NumModules; m++ {
			std := 0.02
			if m == ModO || m == ModDown {
				std /= math.Sqrt(2 * float64(w.Cfg.Layers))
			}
			normal(w.Layers[l].W[m].F32, std)
		}
	}
	ones(w.FinalNorm)
	if !w.Cfg.TiedEmbeddings {
		normal(w.Output.F32, 0.02)
	}
}

// Tensor is a named parameter (shared with the weights, not a copy): float32 values in Data, or bfloat16
// values in BF16 for the matrices of bfloat16 weights.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
	BF16  []uint16
	mat   *Mat // the matrix the tensor is, if any
}

// Tensors lists the parameters under their Hugging Face names.
func (w *Weights) Tensors() []Tensor {
	c := w.Cfg
	mat := func(name string, m *Mat) Tensor {
		return Tensor{Name: name, Shape: []int{m.Rows, m.Cols}, Data: m.F32, BF16: m.BF16, mat: m}
	}
	vec := func(name string, v []float32) Tensor { return Tensor{Name: name, Shape: []int{len(v)}, Data: v} }
	ts := []Tensor{mat("model.embed_tokens.weight", &w.Embed)}
	for l := range w.Layers {
		ly := &w.Layers[l]
		p := fmt.Sprintf("model.layers.%d.", l)
		if c.SandwichNorm { // Gemma: post_attention_layernorm norms the attention's output
			ts = append(ts, vec(p+"input_layernorm.weight", ly.AttnNorm),
				vec(p+"post_attention_layernorm.weight", ly.PostAttnNorm),
				vec(p+"pre_feedforward_layernorm.weight", ly.MLPNorm),
				vec(p+"post_feedforward_layernorm.weight", ly.PostMLPNorm))
		} else {
			ts = append(ts, vec(p+"input_layernorm.weight", ly.AttnNorm), vec(p+"post_attention_layernorm.weight", ly.MLPNorm))
		}
		for m := 0; m < NumModules; m++ {
			ts = append(ts, mat(p+modulePath(m)+".weight", &ly.W[m]))
			if c.Bias[m] {
				ts = append(ts, vec(p+modulePath(m)+".bias", ly.Bias[m]))
			}
		}
		if c.QKNorm {
			ts = append(ts, vec(p+"self_attn.q_norm.weight", ly.QNorm), vec(p+"self_attn.k_norm.weight", ly.KNorm))
		}
	}
	ts = append(ts, vec("model.norm.weight", w.FinalNorm))
	if !c.TiedEmbeddings {
		ts = append(ts, mat("lm_head.weight", &w.Output))
	}
	return ts
}

// modulePath is the Hugging Face sub-path of a projection inside a layer.
func modulePath(m int) string {
	if m <= ModO {
		return "self_attn." + ModuleNames[m]
	}
	return "mlp." + ModuleNames[m]
}

// Clone returns a deep copy in the same storage (used for gradient buffers and tests).
func (w *Weights) Clone() *Weights {
	c, _ := newWeights(w.Cfg, w.DType())
	src, dst := w.Tensors(), c.Tensors()
	for i := range src {
		copy(dst[i].Data, src[i].Data)
		copy(dst[i].BF16, src[i].BF16)
	}
	return c
}
