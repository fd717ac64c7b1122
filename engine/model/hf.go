package model

import (
	"encoding/json"
	"fmt"

	"github.com/trainyard/trainyard/engine/safetensors"
)

// hfConfig is the subset of a Hugging Face LlamaConfig (config.json) the engine reads and writes.
type hfConfig struct {
	Architectures  []string        `json:"architectures,omitempty"`
	ModelType      string          `json:"model_type"`
	VocabSize      int             `json:"vocab_size"`
	HiddenSize     int             `json:"hidden_size"`
	Intermediate   int             `json:"intermediate_size"`
	Layers         int             `json:"num_hidden_layers"`
	Heads          int             `json:"num_attention_heads"`
	KVHeads        int             `json:"num_key_value_heads,omitempty"`
	HeadDim        int             `json:"head_dim,omitempty"`
	MaxPositions   int             `json:"max_position_embeddings"`
	RopeTheta      float64         `json:"rope_theta,omitempty"`
	RMSNormEps     float64         `json:"rms_norm_eps"`
	TieEmbeddings  bool            `json:"tie_word_embeddings"`
	HiddenAct      string          `json:"hidden_act,omitempty"`
	RopeScaling    json.RawMessage `json:"rope_scaling,omitempty"`
	AttentionBias  bool            `json:"attention_bias,omitempty"`
	TorchDType     string          `json:"torch_dtype,omitempty"`
	TokenizerClass string          `json:"trainyard_tokenizer,omitempty"`
}

// ParseHFConfig reads a Llama-architecture config.json. It rejects features the engine does not implement
// (rope scaling, attention biases, activations other than SiLU) rather than computing something else.
func ParseHFConfig(js []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(js, &h); err != nil {
		return Config{}, fmt.Errorf("%w: config.json: %v", ErrConfig, err)
	}
	if h.ModelType != "" && h.ModelType != "llama" {
		return Config{}, fmt.Errorf("%w: model_type %q is not llama", ErrConfig, h.ModelType)
	}
	if len(h.RopeScaling) > 0 && string(h.RopeScaling) != "null" {
		return Config{}, fmt.Errorf("%w: rope_scaling is not supported", ErrConfig)
	}
	if h.AttentionBias || (h.HiddenAct != "" && h.HiddenAct != "silu") {
		return Config{}, fmt.Errorf("%w: attention bias or activation %q not supported", ErrConfig, h.HiddenAct)
	}
	c := Config{VocabSize: h.VocabSize, Dim: h.HiddenSize, Layers: h.Layers, Heads: h.Heads, KVHeads: h.KVHeads,
		HeadDim: h.HeadDim, Hidden: h.Intermediate, MaxSeqLen: h.MaxPositions, RopeTheta: h.RopeTheta,
		NormEps: float32(h.RMSNormEps), TiedEmbeddings: h.TieEmbeddings}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Dim / c.Heads
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	return c, c.Validate()
}

// HFConfigJSON writes cfg as a Llama config.json.
func (c Config) HFConfigJSON() ([]byte, error) {
	return json.MarshalIndent(hfConfig{Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama",
		VocabSize: c.VocabSize, HiddenSize: c.Dim, Intermediate: c.Hidden, Layers: c.Layers, Heads: c.Heads,
		KVHeads: c.KVHeads, HeadDim: c.HeadDim, MaxPositions: c.MaxSeqLen, RopeTheta: c.RopeTheta,
		RMSNormEps: float64(c.NormEps), TieEmbeddings: c.TiedEmbeddings, HiddenAct: "silu", TorchDType: "float32",
		TokenizerClass: "byte"}, "", "  ")
}

// LoadWeights builds weights for cfg from tensors named as in Hugging Face Llama checkpoints. A missing
// lm_head with untied embeddings, a missing tensor or a shape mismatch is an error.
func LoadWeights(cfg Config, tensors map[string]safetensors.Tensor) (*Weights, error) {
	if _, ok := tensors["lm_head.weight"]; !ok && !cfg.TiedEmbeddings {
		cfg.TiedEmbeddings = true // many small checkpoints omit the head and tie it implicitly
	}
	w, err := NewWeights(cfg)
	if err != nil {
		return nil, err
	}
	for _, t := range w.Tensors() {
		src, ok := tensors[t.Name]
		if !ok {
			return nil, fmt.Errorf("%w: checkpoint lacks tensor %s", ErrConfig, t.Name)
		}
		if fmt.Sprint(src.Shape) != fmt.Sprint(t.Shape) {
			return nil, fmt.Errorf("%w: tensor %s has shape %v, config implies %v", ErrConfig, t.Name, src.Shape, t.Shape)
		}
		copy(t.Data, src.Data)
	}
	return w, nil
}

// SafetensorsList converts tensors for safetensors.Write.
func SafetensorsList(ts []Tensor) []safetensors.Tensor {
	out := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		out[i] = safetensors.Tensor{Name: t.Name, Shape: t.Shape, Data: t.Data}
	}
	return out
}
