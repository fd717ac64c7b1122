package model

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/safetensors"
)

// The config.json files of the supported families as published, trimmed of fields the engine ignores.
const (
	llama32Config = `{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":2048,
		"intermediate_size":8192,"max_position_embeddings":131072,"mlp_bias":false,"model_type":"llama","num_attention_heads":32,
		"num_hidden_layers":16,"num_key_value_heads":8,"rms_norm_eps":1e-05,"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,
		"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},"rope_theta":500000.0,
		"tie_word_embeddings":true,"torch_dtype":"bfloat16","vocab_size":128256,"head_dim":64}`
	qwen25Config = `{"architectures":["Qwen2ForCausalLM"],"hidden_act":"silu","hidden_size":896,"intermediate_size":4864,
		"max_position_embeddings":32768,"max_window_layers":21,"model_type":"qwen2","num_attention_heads":14,"num_hidden_layers":24,
		"num_key_value_heads":2,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000.0,"sliding_window":32768,
		"tie_word_embeddings":true,"torch_dtype":"bfloat16","use_sliding_window":false,"vocab_size":151936}`
	qwen3Config = `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"head_dim":128,"hidden_act":"silu",
		"hidden_size":1024,"intermediate_size":3072,"max_position_embeddings":40960,"max_window_layers":28,"model_type":"qwen3",
		"num_attention_heads":16,"num_hidden_layers":28,"num_key_value_heads":8,"rms_norm_eps":1e-06,"rope_scaling":null,
		"rope_theta":1000000,"sliding_window":null,"tie_word_embeddings":true,"torch_dtype":"bfloat16","use_sliding_window":false,
		"vocab_size":151936}`
)

func TestParseHFConfigFamilies(t *testing.T) {
	l, err := ParseHFConfig([]byte(llama32Config))
	if err != nil {
		t.Fatal(err)
	}
	if l.Rope3 != (Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigMaxPos: 8192}) || l.QKNorm ||
		l.Bias != [NumModules]bool{} || l.HeadDim != 64 || !l.TiedEmbeddings || l.KVHeads != 8 {
		t.Errorf("llama 3.2: %+v", l)
	}
	// Llama-3.2-1B's 1.24B parameters, tied head counted once.
	if n := l.NumParams(); n != 1235814400 {
		t.Errorf("llama 3.2 params %d", n)
	}
	q2, err := ParseHFConfig([]byte(qwen25Config))
	if err != nil {
		t.Fatal(err)
	}
	if q2.Bias != [NumModules]bool{ModQ: true, ModK: true, ModV: true} || q2.QKNorm || q2.HeadDim != 64 {
		t.Errorf("qwen2.5: %+v", q2)
	}
	if n := q2.NumParams(); n != 494032768 { // Qwen2.5-0.5B
		t.Errorf("qwen2.5 params %d", n)
	}
	q3, err := ParseHFConfig([]byte(qwen3Config))
	if err != nil {
		t.Fatal(err)
	}
	if !q3.QKNorm || q3.Bias != [NumModules]bool{} || q3.HeadDim != 128 || q3.QDim() != 2048 || q3.Dim != 1024 {
		t.Errorf("qwen3: %+v", q3)
	}
	if n := q3.NumParams(); n != 596049920 { // Qwen3-0.6B
		t.Errorf("qwen3 params %d", n)
	}
	for _, c := range []Config{l, q2, q3} { // written and read back unchanged
		js, err := c.HFConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseHFConfig(js)
		if err != nil || back != c {
			t.Errorf("round trip of %s: %+v, %v", c.Arch, back, err)
		}
	}
}

func TestParseHFConfigRejects(t *testing.T) {
	for field, js := range map[string]string{
		"model_type":         `{"model_type":"gemma","vocab_size":10,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8,"rms_norm_eps":1e-5}`,
		"rope_scaling":       `{"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8,"rms_norm_eps":1e-5,"rope_scaling":{"type":"linear","factor":2}}`,
		"use_sliding_window": `{"model_type":"qwen2","vocab_size":10,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8,"rms_norm_eps":1e-5,"use_sliding_window":true}`,
		"hidden_act":         `{"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8,"rms_norm_eps":1e-5,"hidden_act":"gelu"}`,
		"llama3":             `{"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8,"rms_norm_eps":1e-5,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":4,"high_freq_factor":1,"original_max_position_embeddings":8}}`,
	} {
		_, err := ParseHFConfig([]byte(js))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// TestRopeLlama3Bands checks the llama3 frequency adjustment on Llama 3.2's parameters: the highest
// frequency is kept, the lowest divided by the factor, and one in the blended band interpolated.
func TestRopeLlama3Bands(t *testing.T) {
	c, _ := ParseHFConfig([]byte(llama32Config))
	inv := ropeInvFreq(c)
	plain := c
	plain.Rope3 = Llama3Rope{}
	base := ropeInvFreq(plain)
	if inv[0] != base[0] || math.Abs(inv[31]-base[31]/32) > 1e-18 {
		t.Errorf("bands: %g vs %g, %g vs %g", inv[0], base[0], inv[31], base[31]/32)
	}
	blended := 0
	for i := range inv {
		wave := 2 * math.Pi / base[i]
		if wave > 8192/4.0 && wave < 8192/1.0 {
			blended++
			if !(inv[i] < base[i] && inv[i] > base[i]/32) {
				t.Errorf("frequency %d (wavelength %.0f) = %g, not between %g and %g", i, wave, inv[i], base[i]/32, base[i])
			}
		}
	}
	if blended == 0 {
		t.Error("no frequency in the blended band")
	}
}

// TestLoadWeightsArchitectures round-trips every architecture's tensors through LoadWeights, and picks up
// biases present in a checkpoint whose config does not announce them.
func TestLoadWeightsArchitectures(t *testing.T) {
	for name, cfg := range archConfigs() {
		w := randomModel(t, cfg, 9)
		m := map[string]safetensors.Tensor{}
		for _, st := range SafetensorsList(w.Tensors()) {
			m[st.Name] = st
		}
		announced := cfg
		announced.Bias = [NumModules]bool{}
		got, err := LoadWeights(announced, m, F32)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Cfg != cfg {
			t.Errorf("%s: loaded config %+v, want %+v", name, got.Cfg, cfg)
		}
		want := w.Tensors()
		for i, ts := range got.Tensors() {
			if ts.Name != want[i].Name || math.Float32bits(ts.Data[len(ts.Data)-1]) != math.Float32bits(want[i].Data[len(ts.Data)-1]) {
				t.Fatalf("%s: tensor %d %s differs", name, i, ts.Name)
			}
		}
		if cfg.QKNorm {
			delete(m, "model.layers.1.self_attn.k_norm.weight")
			if _, err := LoadWeights(cfg, m, BF16); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "k_norm") {
				t.Errorf("%s without k_norm: %v", name, err)
			}
		}
	}
}

// Gemma 3's config.json files as published (gemma-3-270m: layer_types, transformers 4.55; gemma-3-1b-it:
// sliding_window_pattern, 4.50; gemma-3-4b-it: the multimodal wrapper whose text_config leaves most fields
// to Gemma3TextConfig's defaults), trimmed of fields the engine ignores.
const (
	gemma270mConfig = `{"_sliding_window_pattern":6,"architectures":["Gemma3ForCausalLM"],"attention_bias":false,
		"attn_logit_softcapping":null,"bos_token_id":2,"eos_token_id":1,"final_logit_softcapping":null,"head_dim":256,
		"hidden_activation":"gelu_pytorch_tanh","hidden_size":640,"intermediate_size":2048,"layer_types":[
		"sliding_attention","sliding_attention","sliding_attention","sliding_attention","sliding_attention","full_attention",
		"sliding_attention","sliding_attention","sliding_attention","sliding_attention","sliding_attention","full_attention",
		"sliding_attention","sliding_attention","sliding_attention","sliding_attention","sliding_attention","full_attention"],
		"max_position_embeddings":32768,"model_type":"gemma3_text","num_attention_heads":4,"num_hidden_layers":18,
		"num_key_value_heads":1,"query_pre_attn_scalar":256,"rms_norm_eps":1e-06,"rope_local_base_freq":10000.0,
		"rope_scaling":null,"rope_theta":1000000.0,"sliding_window":512,"torch_dtype":"bfloat16",
		"use_bidirectional_attention":false,"vocab_size":262144}`
	gemma1bConfig = `{"architectures":["Gemma3ForCausalLM"],"attention_bias":false,"attn_logit_softcapping":null,
		"cache_implementation":"hybrid","eos_token_id":[1,106],"final_logit_softcapping":null,"head_dim":256,
		"hidden_activation":"gelu_pytorch_tanh","hidden_size":1152,"intermediate_size":6912,"max_position_embeddings":32768,
		"model_type":"gemma3_text","num_attention_heads":4,"num_hidden_layers":26,"num_key_value_heads":1,
		"query_pre_attn_scalar":256,"rms_norm_eps":1e-06,"rope_local_base_freq":10000,"rope_scaling":null,
		"rope_theta":1000000,"sliding_window":512,"sliding_window_pattern":6,"torch_dtype":"bfloat16","vocab_size":262144}`
	gemma4bConfig = `{"architectures":["Gemma3ForConditionalGeneration"],"boi_token_index":255999,"eoi_token_index":256000,
		"eos_token_id":[1,106],"image_token_index":262144,"mm_tokens_per_image":256,"model_type":"gemma3",
		"text_config":{"hidden_size":2560,"intermediate_size":10240,"model_type":"gemma3_text","num_hidden_layers":34,
		"rope_scaling":{"factor":8.0,"rope_type":"linear"},"sliding_window":1024},"torch_dtype":"bfloat16",
		"vision_config":{"hidden_size":1152,"image_size":896,"intermediate_size":4304,"model_type":"siglip_vision_model",
		"num_attention_heads":16,"num_hidden_layers":27,"patch_size":14,"vision_use_head":false}}`
)

func TestParseHFConfigGemma3(t *testing.T) {
	for name, tc := range map[string]struct {
		js     string
		params int
		check  func(c Config) bool
	}{
		// gemma-3-270m's and gemma-3-1b's published parameter counts.
		"270m": {gemma270mConfig, 268098176, func(c Config) bool {
			return c.Dim == 640 && c.HeadDim == 256 && c.KVHeads == 1 && c.SlidingWindow == 512 && c.SlidingPattern == 6
		}},
		"1b": {gemma1bConfig, 999885952, func(c Config) bool {
			return c.Dim == 1152 && c.Hidden == 6912 && c.Layers == 26 && c.SlidingPattern == 6 && c.RopeLinear == 0
		}},
		"4b": {gemma4bConfig, 0, func(c Config) bool { // defaults: 8 heads, 4 KV heads, vocabulary 262,208
			return c.Dim == 2560 && c.Heads == 8 && c.KVHeads == 4 && c.VocabSize == 262208 && c.RopeLinear == 8 &&
				c.SlidingWindow == 1024 && c.MaxSeqLen == 131072 && c.QueryScalar == 256 && c.TiedEmbeddings
		}},
	} {
		c, err := ParseHFConfig([]byte(tc.js))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !c.QKNorm || !c.NormPlusOne || !c.SandwichNorm || !c.EmbedScale || !c.GeluTanh || c.Arch != "gemma3_text" ||
			c.RopeTheta != 1e6 || c.RopeLocalTheta != 1e4 || c.AttnSoftcap != 0 || c.FinalSoftcap != 0 || !tc.check(c) {
			t.Errorf("%s: %+v", name, c)
		}
		if tc.params != 0 && c.NumParams() != tc.params {
			t.Errorf("%s: %d parameters, want %d", name, c.NumParams(), tc.params)
		}
		for l := 0; l < c.Layers; l++ { // every sixth layer global
			if c.Local(l) != ((l+1)%6 != 0) {
				t.Errorf("%s: layer %d local %v", name, l, c.Local(l))
			}
		}
		js, err := c.HFConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := ParseHFConfig(js); err != nil || back != c {
			t.Errorf("%s: round trip %+v, %v", name, back, err)
		}
	}
	for field, js := range map[string]string{
		"hidden_activation":           `{"model_type":"gemma3_text","hidden_activation":"silu"}`,
		"use_bidirectional_attention": `{"model_type":"gemma3_text","use_bidirectional_attention":true}`,
		"layer_types":                 `{"model_type":"gemma3_text","num_hidden_layers":3,"layer_types":["full_attention","sliding_attention","full_attention"]}`,
		"rope_scaling":                `{"model_type":"gemma3_text","rope_scaling":{"rope_type":"yarn","factor":2}}`,
		"text_config":                 `{"model_type":"gemma3"}`,
		"sliding_window":              `{"model_type":"gemma3_text","sliding_window":null}`,
	} {
		if _, err := ParseHFConfig([]byte(js)); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// TestLoadWeightsGemma3Prefixes: the text model of a Gemma3ForConditionalGeneration checkpoint loads from
// either prefix transformers wrote (language_model.model. and model.language_model.), beside vision tensors
// it does not read, into the weights a Gemma3ForCausalLM checkpoint of the same tensors gives.
func TestLoadWeightsGemma3Prefixes(t *testing.T) {
	cfg := tinyGemma3(false)
	w := randomModel(t, cfg, 3)
	want := map[string]safetensors.Tensor{}
	for _, ts := range SafetensorsList(w.Tensors()) {
		want[ts.Name] = ts
	}
	for _, prefix := range []string{"language_model.model.", "model.language_model."} {
		renamed := map[string]safetensors.Tensor{"vision_tower.vision_model.post_layernorm.weight": {
			Name: "vision_tower.vision_model.post_layernorm.weight", Shape: []int{3}, Data: []float32{1, 2, 3}}}
		for name, ts := range want {
			ts.Name = prefix + strings.TrimPrefix(name, "model.")
			renamed[ts.Name] = ts
		}
		got, err := LoadWeights(cfg, renamed, F32)
		if err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
		gt := got.Tensors()
		for i, ts := range w.Tensors() {
			if gt[i].Name != ts.Name || !slicesEqual(gt[i].Data, ts.Data) {
				t.Fatalf("%s: tensor %s differs", prefix, ts.Name)
			}
		}
	}
}

func slicesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
