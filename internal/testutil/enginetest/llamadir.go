package enginetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// SmallLlama is a random-weight Llama shape on the engine's byte tokenizer:
// about 0.8M parameters and a 2,048-token context, so that it opens in
// milliseconds and a long completion still takes a second or more.
var SmallLlama = model.Config{VocabSize: tokenizer.VocabSize, Dim: 128, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32,
	Hidden: 344, MaxSeqLen: 2048, RopeTheta: 10000, NormEps: 1e-5}

// WriteLlamaDir writes a base model directory as engine.OpenDir reads it (a
// Hugging Face config.json and model.safetensors, no tokenizer files: the
// byte tokenizer) with cfg's shape and weights drawn from seed, and returns
// the directory.
func WriteLlamaDir(t testing.TB, cfg model.Config, seed int64) string {
	t.Helper()
	w, err := model.NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Init(seed)
	dir := t.TempDir()
	hf := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": cfg.VocabSize, "hidden_size": cfg.Dim, "intermediate_size": cfg.Hidden,
		"num_hidden_layers": cfg.Layers, "num_attention_heads": cfg.Heads, "num_key_value_heads": cfg.KVHeads,
		"max_position_embeddings": cfg.MaxSeqLen, "rope_theta": cfg.RopeTheta, "rms_norm_eps": cfg.NormEps,
		"tie_word_embeddings": cfg.TiedEmbeddings, "hidden_act": "silu", "torch_dtype": "float32"}
	js, err := json.Marshal(hf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := safetensors.Write(f, model.SafetensorsList(w.Tensors()), nil, "F32"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
