package model

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// hfConfig is the subset of a Hugging Face LlamaConfig, Qwen2Config, Qwen3Config or Gemma3TextConfig
// (config.json) the engine reads and writes.
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

	// Gemma 3's.
	HiddenActivation string          `json:"hidden_activation,omitempty"`
	QueryPreAttn     float64         `json:"query_pre_attn_scalar,omitempty"`
	AttnSoftcap      *float64        `json:"attn_logit_softcapping,omitempty"`
	FinalSoftcap     *float64        `json:"final_logit_softcapping,omitempty"`
	SlidingWindow    *int            `json:"sliding_window,omitempty"`
	SlidingPattern   int             `json:"sliding_window_pattern,omitempty"`
	SlidingPattern2  int             `json:"_sliding_window_pattern,omitempty"` // transformers ≥ 4.53's name
	LayerTypes       []string        `json:"layer_types,omitempty"`
	RopeLocalBase    float64         `json:"rope_local_base_freq,omitempty"`
	Bidirectional    bool            `json:"use_bidirectional_attention,omitempty"` // EmbeddingGemma's
	TextConfig       json.RawMessage `json:"text_config,omitempty"`                 // Gemma3ForConditionalGeneration's
}

// gemma3Defaults are Gemma3TextConfig's defaults, which the published config.json files rely on for the
// fields they leave out (the text_config of the multimodal checkpoints omits most of them).
func gemma3Defaults() hfConfig {
	window, tie := 4096, true
	return hfConfig{VocabSize: 262208, HiddenSize: 2304, Intermediate: 9216, Layers: 26, Heads: 8, KVHeads: 4,
		HeadDim: 256, HiddenActivation: "gelu_pytorch_tanh", MaxPositions: 131072, RMSNormEps: 1e-6,
		RopeTheta: 1e6, QueryPreAttn: 256, SlidingWindow: &window, RopeLocalBase: 10000, SlidingPattern: 6,
		TieEmbeddings: tie}
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
var archNames = map[string]string{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
	"gemma3_text": "Gemma3ForCausalLM", "gemma3": "Gemma3ForConditionalGeneration"}

// supportedModelTypes lists the config.json model_type values the engine loads, for messages.
const supportedModelTypes = "llama, qwen2, qwen3, gemma3_text, gemma3 (its text model)"

// ParseHFConfig reads a Llama, Qwen2, Qwen3 or Gemma 3 config.json (Gemma3ForCausalLM's, or the text_config
// of Gemma3ForConditionalGeneration's, whose vision tower the engine leaves out). It rejects features the
// engine does not implement (other architectures, rope scaling other than llama3 (and linear for Gemma),
// Qwen's sliding-window attention, other activations) with an error naming the field, rather than
// computing something else.
func ParseHFConfig(js []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(js, &h); err != nil {
		return Config{}, fmt.Errorf("%w: config.json: %v", ErrConfig, err)
	}
	if h.ModelType == "" {
		h.ModelType = "llama"
	}
	if _, ok := archNames[h.ModelType]; !ok {
		return Config{}, fmt.Errorf("%w: model_type %q is not supported (%s)", ErrConfig, h.ModelType, supportedModelTypes)
	}
	if h.ModelType == "gemma3" || h.ModelType == "gemma3_text" {
		return parseGemma3(js, h)
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

// parseGemma3 reads a Gemma 3 config (h is the file read once without defaults, for its model_type and
// text_config) over Gemma3TextConfig's defaults.
func parseGemma3(js []byte, h hfConfig) (Config, error) {
	body := js
	if h.ModelType == "gemma3" {
		if len(h.TextConfig) == 0 || string(h.TextConfig) == "null" {
			return Config{}, fmt.Errorf("%w: model_type gemma3 has no text_config", ErrConfig)
		}
		body = h.TextConfig
	}
	g := gemma3Defaults()
	if err := json.Unmarshal(body, &g); err != nil {
		return Config{}, fmt.Errorf("%w: config.json: %v", ErrConfig, err)
	}
	if h.ModelType == "gemma3" {
		// The outer file's tie_word_embeddings is the one transformers ties by (true unless set there).
		var outer struct {
			Tie *bool `json:"tie_word_embeddings"`
		}
		_ = json.Unmarshal(js, &outer) // read once above
		g.TieEmbeddings = outer.Tie == nil || *outer.Tie
	}
	if g.Bidirectional {
		return Config{}, fmt.Errorf("%w: use_bidirectional_attention is not supported (a causal LM)", ErrConfig)
	}
	if g.HiddenActivation != "gelu_pytorch_tanh" {
		return Config{}, fmt.Errorf("%w: hidden_activation %q is not supported (gelu_pytorch_tanh)", ErrConfig, g.HiddenActivation)
	}
	c := Config{VocabSize: g.VocabSize, Dim: g.HiddenSize, Layers: g.Layers, Heads: g.Heads, KVHeads: g.KVHeads,
		HeadDim: g.HeadDim, Hidden: g.Intermediate, MaxSeqLen: g.MaxPositions, RopeTheta: g.RopeTheta,
		NormEps: float32(g.RMSNormEps), TiedEmbeddings: g.TieEmbeddings, Arch: "gemma3_text", QKNorm: true,
		NormPlusOne: true, SandwichNorm: true, EmbedScale: true, GeluTanh: true, QueryScalar: g.QueryPreAttn,
		RopeLocalTheta: g.RopeLocalBase}
	if g.AttentionBias {
		c.Bias[ModQ], c.Bias[ModK], c.Bias[ModV], c.Bias[ModO] = true, true, true, true
	}
	if g.AttnSoftcap != nil {
		c.AttnSoftcap = float32(*g.AttnSoftcap)
	}
	if g.FinalSoftcap != nil {
		c.FinalSoftcap = float32(*g.FinalSoftcap)
	}
	if g.SlidingWindow == nil || *g.SlidingWindow <= 0 {
		return Config{}, fmt.Errorf("%w: sliding_window must be a positive number of positions", ErrConfig)
	}
	c.SlidingWindow = *g.SlidingWindow
	c.SlidingPattern = g.SlidingPattern
	if g.SlidingPattern2 > 0 {
		c.SlidingPattern = g.SlidingPattern2
	}
	if len(g.LayerTypes) > 0 {
		p, err := layerPattern(g.LayerTypes, c.Layers)
		if err != nil {
			return Config{}, err
		}
		c.SlidingPattern = p
	}
	if rs := g.RopeScaling; rs != nil {
		kind := rs.RopeType
		if kind == "" {
			kind = rs.Type
		}
		switch kind {
		case "default":
		case "linear":
			c.RopeLinear = rs.Factor
			if c.RopeLinear <= 0 {
				return Config{}, fmt.Errorf("%w: rope_scaling linear needs a positive factor", ErrConfig)
			}
		default:
			return Config{}, fmt.Errorf("%w: rope_scaling type %q is not supported for gemma3 (linear)", ErrConfig, kind)
		}
	}
	return c, c.Validate()
}

// layerPattern turns layer_types into the period of its global layers: every p-th layer
// "full_attention", the others "sliding_attention", as every Gemma 3 has them.
func layerPattern(types []string, layers int) (int, error) {
	if len(types) != layers {
		return 0, fmt.Errorf("%w: layer_types has %d entries for %d layers", ErrConfig, len(types), layers)
	}
	p := 0
	for i, t := range types {
		if t == "full_attention" {
			p = i + 1
			break
		}
	}
	if p == 0 { // no global layer: a period longer than the model
		p = layers + 1
	}
	for i, t := range types {
		want := "sliding_attention"
		if (i+1)%p == 0 {
			want = "full_attention"
		}
		if t != want {
			return 0, fmt.Errorf("%w: layer_types: layer %d is %q; only every %d-th layer global is supported",
				ErrConfig, i, t, p)
		}
	}
	return p, nil
}

// HFConfigJSON writes cfg as a Hugging Face config.json of its architecture.
func (c Config) HFConfigJSON() ([]byte, error) {
	arch := c.Arch
	if arch == "" {
		arch = "llama"
	}
	if arch == "gemma3_text" {
		return c.gemma3JSON()
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

// gemma3JSON writes a Gemma3ForCausalLM config.json.
func (c Config) gemma3JSON() ([]byte, error) {
	window := c.SlidingWindow
	h := hfConfig{Architectures: []string{archNames["gemma3_text"]}, ModelType: "gemma3_text",
		VocabSize: c.VocabSize, HiddenSize: c.Dim, Intermediate: c.Hidden, Layers: c.Layers, Heads: c.Heads,
		KVHeads: c.KVHeads, HeadDim: c.HeadDim, MaxPositions: c.MaxSeqLen, RopeTheta: c.RopeTheta,
		RMSNormEps: float64(c.NormEps), TieEmbeddings: c.TiedEmbeddings, HiddenActivation: "gelu_pytorch_tanh",
		TorchDType: "float32", TokenizerClass: "byte", AttentionBias: c.Bias[ModQ], QueryPreAttn: c.QueryScalar,
		SlidingWindow: &window, SlidingPattern: c.SlidingPattern, RopeLocalBase: c.RopeLocalTheta}
	if c.AttnSoftcap > 0 {
		v := float64(c.AttnSoftcap)
		h.AttnSoftcap = &v
	}
	if c.FinalSoftcap > 0 {
		v := float64(c.FinalSoftcap)
		h.FinalSoftcap = &v
	}
	if c.RopeLinear > 0 {
		h.RopeScaling = &hfRopeScaling{RopeType: "linear", Factor: c.RopeLinear}
	}
	return json.MarshalIndent(h, "", "  ")
}

// LoadWeights builds weights for cfg from tensors named as in Hugging Face checkpoints, with matrices stored
// as dtype (F16 and F32 checkpoints are rounded once to bfloat16 for BF16; BF16 ones are copied). A missing
// lm_head means tied embeddings; projection biases present in the checkpoint are used even when config.json
// does not announce them. The text model of a Gemma3ForConditionalGeneration checkpoint is found under
// either prefix transformers has written it with (language_model.model. before 4.52, model.language_model.
// since); its vision tower is not read. A missing tensor or a shape mismatch is an error.
func LoadWeights(cfg Config, tensors map[string]safetensors.Tensor, dtype DType) (*Weights, error) {
	if _, ok := lookupTensor(tensors, "lm_head.weight"); !ok && !cfg.TiedEmbeddings {
		cfg.TiedEmbeddings = true // many small checkpoints omit the head and tie it implicitly
	}
	for m := 0; m < NumModules; m++ {
		if _, ok := lookupTensor(tensors, "model.layers.0."+modulePath(m)+".bias"); ok {
			cfg.Bias[m] = true
		}
	}
	w, err := newWeights(cfg, dtype)
	if err != nil {
		return nil, err
	}
	for _, t := range w.Tensors() {
		src, ok := lookupTensor(tensors, t.Name)
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

// lookupTensor finds the tensor a causal LM names name ("model.…" or "lm_head.weight") in a checkpoint of
// it or of a multimodal model wrapping it.
func lookupTensor(tensors map[string]safetensors.Tensor, name string) (safetensors.Tensor, bool) {
	if t, ok := tensors[name]; ok {
		return t, true
	}
	if t, ok := tensors["language_model."+name]; ok {
		return t, true
	}
	if rest, ok := strings.CutPrefix(name, "model."); ok {
		t, ok := tensors["model.language_model."+rest]
		return t, ok
	}
	return safetensors.Tensor{}, false
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
