package model

import (
	"encoding/json"
	"fmt"

	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// hfConfig is the subset of a Hugging Face LlamaConfig, Qwen2Config or Qwen3Config (config.json) the engine
// reads and writes.
type hfConfig struct {
	Architectures    []string       `json:"architectures,omitempty"`
	ModelType        string         `json:"model_type"`
	VocabSize        int            `json:"vocab_size"`
	HiddenSize       int            `json:"hidden_size"`
	Intermediate     int            `json:"intermediate_size"`
	Layers           int            `json:"num_hidden_layers"`
	Heads            int            `json:"num_attention_heads"`
	KVHeads          int            `json:"num_key_value_heads,omitempty"`
	HeadDim          int            `json:"head_dim,omitempty"`
	MaxPositions     int            `json:"max_position_embeddings"`
	RopeTheta        float64        `json:"rope_theta,omitempty"`
	RMSNormEps       float64        `json:"rms_norm_eps"`
	TieEmbeddings    bool           `json:"tie_word_embeddings"`
	HiddenAct        string         `json:"hidden_act,omitempty"`
	RopeScaling      *hfRopeScaling `json:"rope_scaling,omitempty"`
	AttentionBias    bool           `json:"attention_bias,omitempty"`
	MLPBias          bool           `json:"mlp_bias,omitempty"`
	UseSlidingWindow bool           `json:"use_sliding_window,omitempty"`
	TorchDType       string         `json:"torch_dtype,omitempty"`
	TokenizerClass   string         `json:"trainyard_tokenizer,omitempty"`
}

// hfRopeScaling is config.json's rope_scaling; older files name the kind "type", newer ones "rope_type".
type hfRopeScaling struct {
	RopeType       string  `json:"rope_type,omitempty"`
	Type           string  `json:"type,omitempty"`
	Factor         float64 `json:"factor"`
	LowFreqFactor  float64 `json:"low_freq_factor"`
	HighFreqFactor float64 `json:"high_freq_factor"`
	OrigMaxPos     int     `json:"original_max_position_embeddings"`
}

// archNames maps the supported model_type values to their Hugging Face class names.
var archNames = map[string]string{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}

// ParseHFConfig reads a Llama, Qwen2 or Qwen3 config.json. It rejects features the engine does not implement
// (other architectures, rope scaling other than llama3, sliding-window attention, activations other than
// SiLU) with an error naming the field, rather than computing something else.
func ParseHFConfig(js []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(js, &h); err != nil {
		return Config{}, fmt.Errorf("%w: config.json: %v", ErrConfig, err)
	}
	if h.ModelType == "" {
		h.ModelType = "llama"
	}
	if _, ok := archNames[h.ModelType]; !ok {
		return Config{}, fmt.Errorf("%w: model_type %q is not supported (llama, qwen2, qwen3)", ErrConfig, h.ModelType)
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" {
		return Config{}, fmt.Errorf("%w: hidden_act %q is not supported (silu)", ErrConfig, h.HiddenAct)
	}
	if h.UseSlidingWindow {
		return Config{}, fmt.Errorf("%w: use_sliding_window is not supported", ErrConfig)
	}
	c := Config{VocabSize: h.VocabSize, Dim: h.HiddenSize, Layers: h.Layers, Heads: h.Heads, KVHeads: h.KVHeads,
		HeadDim: h.HeadDim, Hidden: h.Intermediate, MaxSeqLen: h.MaxPositions, RopeTheta: h.RopeTheta,
		NormEps: float32(h.RMSNormEps), TiedEmbeddings: h.TieEmbeddings, Arch: h.ModelType}
	switch h.ModelType {
	case "qwen2": // Qwen2 always has q, k and v biases and no attention_bias field
		c.Bias[ModQ], c.Bias[ModK], c.Bias[ModV] = true, true, true
	case "qwen3":
		c.QKNorm = true
		fallthrough
	default:
		if h.AttentionBias {
			c.Bias[ModQ], c.Bias[ModK], c.Bias[ModV], c.Bias[ModO] = true, true, true, true
		}
	}
	if h.MLPBias {
		if h.ModelType != "llama" {
			return Config{}, fmt.Errorf("%w: mlp_bias is not supported for %s", ErrConfig, h.ModelType)
		}
		c.Bias[ModGate], c.Bias[ModUp], c.Bias[ModDown] = true, true, true
	}
	if rs := h.RopeScaling; rs != nil {
		kind := rs.RopeType
		if kind == "" {
			kind = rs.Type
		}
		switch kind {
		case "default":
		case "llama3":
			c.Rope3 = Llama3Rope{Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor, HighFreqFactor: rs.HighFreqFactor,
				OrigMaxPos: rs.OrigMaxPos}
			if c.Rope3 == (Llama3Rope{}) {
				return Config{}, fmt.Errorf("%w: rope_scaling llama3 has no parameters", ErrConfig)
			}
		default:
			return Config{}, fmt.Errorf("%w: rope_scaling type %q is not supported (llama3)", ErrConfig, kind)
		}
	}
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

// HFConfigJSON writes cfg as a Hugging Face config.json of its architecture.
func (c Config) HFConfigJSON() ([]byte, error) {
	arch := c.Arch
	if arch == "" {
		arch = "llama"
	}
	h := hfConfig{Architectures: []string{archNames[arch]}, ModelType: arch,
		VocabSize: c.VocabSize, HiddenSize: c.Dim, Intermediate: c.Hidden, Layers: c.Layers, Heads: c.Heads,
		KVHeads: c.KVHeads, HeadDim: c.HeadDim, MaxPositions: c.MaxSeqLen, RopeTheta: c.RopeTheta,
		RMSNormEps: float64(c.NormEps), TieEmbeddings: c.TiedEmbeddings, HiddenAct: "silu", TorchDType: "float32",
		TokenizerClass: "byte", AttentionBias: arch != "qwen2" && c.Bias[ModQ], MLPBias: c.Bias[ModGate]}
	if c.Rope3 != (Llama3Rope{}) {
		h.RopeScaling = &hfRopeScaling{RopeType: "llama3", Factor: c.Rope3.Factor, LowFreqFactor: c.Rope3.LowFreqFactor,
			HighFreqFactor: c.Rope3.HighFreqFactor, OrigMaxPos: c.Rope3.OrigMaxPos}
	}
	return json.MarshalIndent(h, "", "  ")
}

// LoadWeights builds weights for cfg from tensors named as in Hugging Face checkpoints, with matrices stored
// as dtype (F16 and F32 checkpoints are rounded once to bfloat16 for BF16; BF16 ones are copied). A missing
// lm_head means tied embeddings; projection biases present in the checkpoint are used even when config.json
// does not announce them. A missing tensor or a shape mismatch is an error.
func LoadWeights(cfg Config, tensors map[string]safetensors.Tensor, dtype DType) (*Weights, error) {
	if _, ok := tensors["lm_head.weight"]; !ok && !cfg.TiedEmbeddings {
		cfg.TiedEmbeddings = true // many small checkpoints omit the head and tie it implicitly
	}
	for m := 0; m < NumModules; m++ {
		if _, ok := tensors["model.layers.0."+modulePath(m)+".bias"]; ok {
			cfg.Bias[m] = true
		}
	}
	w, err := newWeights(cfg, dtype)
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
		if t.BF16 != nil {
			err = src.ReadBFloat16(t.BF16)
		} else {
			err = src.ReadFloat32(t.Data)
		}
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// SafetensorsList converts tensors for safetensors.Write (bfloat16 matrices widened to float32 values,
// which Write stores exactly as BF16).
func SafetensorsList(ts []Tensor) []safetensors.Tensor {
	out := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		data := t.Data
		if t.BF16 != nil {
			data = make([]float32, len(t.BF16))
			linalg.WidenBF16(data, t.BF16)
		}
		out[i] = safetensors.Tensor{Name: t.Name, Shape: t.Shape, Data: data}
	}
	return out
}
