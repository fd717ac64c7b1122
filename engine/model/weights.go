package model

import (
	"fmt"
	"math"
	"math/rand"
)

// Layer holds one decoder block's weights.
type Layer struct {
	AttnNorm []float32
	MLPNorm  []float32
	W        [NumModules][]float32 // [out × in] per projection
}

// Weights are the model's parameters. With tied embeddings Output aliases Embed.
type Weights struct {
	Cfg       Config
	Embed     []float32 // [vocab × dim]
	Layers    []Layer
	FinalNorm []float32
	Output    []float32 // [vocab × dim]
	rope      *ropeTable
}

// NewWeights allocates zeroed weights (norm gains zero too; see Init) for cfg.
func NewWeights(cfg Config) (*Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Weights{Cfg: cfg, Embed: make([]float32, cfg.VocabSize*cfg.Dim),
		Layers: make([]Layer, cfg.Layers), FinalNorm: make([]float32, cfg.Dim)}
	for l := range w.Layers {
		w.Layers[l].AttnNorm = make([]float32, cfg.Dim)
		w.Layers[l].MLPNorm = make([]float32, cfg.Dim)
		for m := 0; m < NumModules; m++ {
			o, i := cfg.Shape(m)
			w.Layers[l].W[m] = make([]float32, o*i)
		}
	}
	if cfg.TiedEmbeddings {
		w.Output = w.Embed
	} else {
		w.Output = make([]float32, cfg.VocabSize*cfg.Dim)
	}
	w.rope = newRopeTable(cfg)
	return w, nil
}

// Init fills the weights for pretraining: N(0, 0.02) matrices, output projections (o, down) scaled down by
// 1/sqrt(2·layers) as in GPT-2, unit norm gains.
func (w *Weights) Init(seed int64) {
	rng := rand.New(rand.NewSource(seed))
	normal := func(x []float32, std float64) {
		for i := range x {
			x[i] = float32(rng.NormFloat64() * std)
		}
	}
	ones := func(x []float32) {
		for i := range x {
			x[i] = 1
		}
	}
	normal(w.Embed, 0.02)
	for l := range w.Layers {
		ones(w.Layers[l].AttnNorm)
		ones(w.Layers[l].MLPNorm)
		for m := 0; m < NumModules; m++ {
			std := 0.02
			if m == ModO || m == ModDown {
				std /= math.Sqrt(2 * float64(w.Cfg.Layers))
			}
			normal(w.Layers[l].W[m], std)
		}
	}
	ones(w.FinalNorm)
	if !w.Cfg.TiedEmbeddings {
		normal(w.Output, 0.02)
	}
}

// Tensor is a named parameter slice (shared with the weights, not a copy).
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Tensors lists the parameters under their Hugging Face Llama names.
func (w *Weights) Tensors() []Tensor {
	c := w.Cfg
	ts := []Tensor{{"model.embed_tokens.weight", []int{c.VocabSize, c.Dim}, w.Embed}}
	for l, ly := range w.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts, Tensor{p + "input_layernorm.weight", []int{c.Dim}, ly.AttnNorm},
			Tensor{p + "post_attention_layernorm.weight", []int{c.Dim}, ly.MLPNorm})
		for m := 0; m < NumModules; m++ {
			o, i := c.Shape(m)
			ts = append(ts, Tensor{p + modulePath(m) + ".weight", []int{o, i}, ly.W[m]})
		}
	}
	ts = append(ts, Tensor{"model.norm.weight", []int{c.Dim}, w.FinalNorm})
	if !c.TiedEmbeddings {
		ts = append(ts, Tensor{"lm_head.weight", []int{c.VocabSize, c.Dim}, w.Output})
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

// Clone returns a deep copy (used for gradient buffers and tests).
func (w *Weights) Clone() *Weights {
	c, _ := NewWeights(w.Cfg)
	src, dst := w.Tensors(), c.Tensors()
	for i := range src {
		copy(dst[i].Data, src[i].Data)
	}
	return c
}
