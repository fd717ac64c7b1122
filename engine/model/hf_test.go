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
