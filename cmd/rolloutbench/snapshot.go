package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// shape is a model architecture served with random weights. Both sit on Qwen3's real tokenizer (vocabulary
// 151,936), so their prompts are the same tokens and their output heads are Qwen-sized.
type shape struct {
	name   string
	config string // config.json
}

// shapes are SmolLM2-135M's body (Llama, 576 wide, 30 layers, 9/3 heads, FFN 1536; its own vocabulary is
// 49,152) and Qwen2.5-0.5B's shape (Qwen2, with its q/k/v biases).
var shapes = []shape{
	{"SmolLM2-135M", `{"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":151936,
		"hidden_size":576,"intermediate_size":1536,"num_hidden_layers":30,"num_attention_heads":9,
		"num_key_value_heads":3,"head_dim":64,"max_position_embeddings":8192,"rope_theta":100000,
		"rms_norm_eps":1e-5,"tie_word_embeddings":true,"hidden_act":"silu","torch_dtype":"bfloat16",
		"bos_token_id":151643,"eos_token_id":151645}`},
	{"Qwen2.5-0.5B", `{"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","vocab_size":151936,
		"hidden_size":896,"intermediate_size":4864,"num_hidden_layers":24,"num_attention_heads":14,
		"num_key_value_heads":2,"head_dim":64,"max_position_embeddings":32768,"rope_theta":1000000,
		"rms_norm_eps":1e-6,"tie_word_embeddings":true,"hidden_act":"silu","torch_dtype":"bfloat16",
		"bos_token_id":151643,"eos_token_id":151645}`},
}

// modelName is the name a shape is served under: its path below the models directory.
func (s shape) modelName() string { return "rolloutbench/" + s.name }

func (s shape) modelConfig() (model.Config, error) {
	cfg, err := model.ParseHFConfig([]byte(s.config))
	if err != nil {
		return cfg, fmt.Errorf("%s config: %w", s.name, err)
	}
	return cfg, nil
}

func findShape(name string) (shape, bool) {
	for _, s := range shapes {
		if strings.EqualFold(s.name, strings.TrimSpace(name)) {
			return s, true
		}
	}
	return shape{}, false
}

func shapeNames() string {
	var n []string
	for _, s := range shapes {
		n = append(n, s.name)
	}
	return strings.Join(n, ", ")
}

// writeSnapshot writes s as a Hugging Face snapshot under modelsDir (config.json, generation_config.json,
// model.safetensors in bfloat16 with weights drawn from seed, and the Qwen3 tokenizer files gunzipped from
// tokenizerDir), unless a complete one is already there. It returns the snapshot's directory.
func writeSnapshot(modelsDir string, s shape, tokenizerDir string, seed int64) (string, error) {
	dir := filepath.Join(modelsDir, filepath.FromSlash(s.modelName()))
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		return dir, nil // written last, so the rest is there
	}
	cfg, err := s.modelConfig()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if err := gunzip(filepath.Join(tokenizerDir, name+".gz"), filepath.Join(dir, name)); err != nil {
			return "", err
		}
	}
	gen := `{"bos_token_id":151643,"eos_token_id":[151645,151643],"do_sample":true}`
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(gen), 0o644); err != nil {
		return "", err
	}
	if err := writeWeights(filepath.Join(dir, "model.safetensors"), cfg, seed); err != nil {
		return "", fmt.Errorf("%s weights: %w", s.name, err)
	}
	var indented map[string]any
	if err := json.Unmarshal([]byte(s.config), &indented); err != nil {
		return "", err
	}
	js, _ := json.MarshalIndent(indented, "", "  ")
	return dir, os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644)
}

// writeWeights writes random weights of cfg (model.Weights.Init's: normal, std 0.02) as bfloat16.
func writeWeights(path string, cfg model.Config, seed int64) error {
	defer debug.FreeOSMemory() // the float32 weights are garbage once written
	w, err := model.NewWeights(cfg)
	if err != nil {
		return err
	}
	w.Init(seed)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = safetensors.Write(f, model.SafetensorsList(w.Tensors()), map[string]string{"format": "pt"}, "BF16")
	return errors.Join(err, f.Close())
}

func gunzip(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("tokenizer files: %w", err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", src, err)
	}
	return out.Close()
}
