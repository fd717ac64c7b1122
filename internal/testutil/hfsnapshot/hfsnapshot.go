// Package hfsnapshot writes small random-weight Hugging Face model snapshots for tests.
package hfsnapshot

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// Qwen3Vocab is the embedding size of Qwen3 checkpoints: the tokenizer's 151,669 ids padded to 151,936.
const Qwen3Vocab = 151936

// TinyQwen3 is a random-weight Qwen3-architecture shape (q/k RMSNorm, grouped-query attention, explicit
// head_dim, tied embeddings) on the real Qwen3 tokenizer: the real vocabulary, everything else tiny
// (hidden 32), so a snapshot is about 5M parameters and a training step takes a fraction of a second.
var TinyQwen3 = model.Config{Arch: "qwen3", QKNorm: true, VocabSize: Qwen3Vocab, Dim: 32, Layers: 2, Heads: 4,
	KVHeads: 2, HeadDim: 8, Hidden: 64, MaxSeqLen: 4096, RopeTheta: 1000000, NormEps: 1e-6, TiedEmbeddings: true}

// RepoRoot is the repository's root directory, found from this file's path.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// WriteQwen3Snapshot writes a Hugging Face snapshot into dir as huggingface-cli lays one out:
// config.json, model.safetensors (bf16) with cfg's shape and weights drawn from seed, generation_config.json,
// and Qwen3's real tokenizer.json and tokenizer_config.json (committed gzipped under
// engine/tokenizer/hf/testdata/qwen3; Apache-2.0).
func WriteQwen3Snapshot(t testing.TB, dir string, cfg model.Config, seed int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Init(seed)
	hf := map[string]any{"architectures": []string{"Qwen3ForCausalLM"}, "model_type": "qwen3",
		"vocab_size": cfg.VocabSize, "hidden_size": cfg.Dim, "intermediate_size": cfg.Hidden,
		"num_hidden_layers": cfg.Layers, "num_attention_heads": cfg.Heads, "num_key_value_heads": cfg.KVHeads,
		"head_dim": cfg.HeadDim, "max_position_embeddings": cfg.MaxSeqLen, "rope_theta": cfg.RopeTheta,
		"rms_norm_eps": cfg.NormEps, "tie_word_embeddings": cfg.TiedEmbeddings, "hidden_act": "silu",
		"torch_dtype": "bfloat16", "bos_token_id": 151643, "eos_token_id": 151645}
	writeJSON(t, filepath.Join(dir, "config.json"), hf)
	writeJSON(t, filepath.Join(dir, "generation_config.json"),
		map[string]any{"bos_token_id": 151643, "eos_token_id": []int{151645, 151643}, "do_sample": true})
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := safetensors.Write(f, model.SafetensorsList(w.Tensors()), map[string]string{"format": "pt"}, "BF16"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(RepoRoot(), "engine", "tokenizer", "hf", "testdata", "qwen3")
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gunzip(t, filepath.Join(src, name+".gz"), filepath.Join(dir, name))
	}
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
}

func gunzip(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
