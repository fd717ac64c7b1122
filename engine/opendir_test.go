package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// writeLlama writes a small Llama checkpoint the way Hugging Face lays it out: config.json plus two
// safetensors shards and their index, in dtype.
func writeLlama(t *testing.T, dir string, w *model.Weights, dtype string) {
	t.Helper()
	cfg := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": w.Cfg.VocabSize, "hidden_size": w.Cfg.Dim, "intermediate_size": w.Cfg.Hidden,
		"num_hidden_layers": w.Cfg.Layers, "num_attention_heads": w.Cfg.Heads, "num_key_value_heads": w.Cfg.KVHeads,
		"max_position_embeddings": w.Cfg.MaxSeqLen, "rope_theta": w.Cfg.RopeTheta, "rms_norm_eps": 1e-5,
		"tie_word_embeddings": w.Cfg.TiedEmbeddings, "hidden_act": "silu", "bos_token_id": 1, "torch_dtype": "bfloat16"}
	js, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := model.SafetensorsList(w.Tensors())
	shards := map[string][]safetensors.Tensor{}
	index := map[string]string{}
	for i, tt := range ts {
		name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[i%2]
		shards[name] = append(shards[name], tt)
		index[tt.Name] = name
	}
	for name, list := range shards {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := safetensors.Write(f, list, nil, dtype); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": index})
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenDirLlamaCheckpoint(t *testing.T) {
	cfg := model.Config{VocabSize: tokenizer.VocabSize, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8,
		Hidden: 48, MaxSeqLen: 64, RopeTheta: 10000, NormEps: 1e-5}
	w, _ := model.NewWeights(cfg)
	w.Init(3)
	for _, dtype := range []string{"F32", "BF16"} {
		dir := t.TempDir()
		writeLlama(t, dir, w, dtype)
		b, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		// OpenDir holds the base as bfloat16 whatever the checkpoint's dtype: the same values as w rounded.
		src := new(Base)
		*src = *b
		src.name, src.w, src.shared = "src", w.ToBF16(), &baseShared{}
		seq, _ := b.RenderTraining([]Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo", Trainable: true}}, nil)
		a, _ := b.NewAdapter(DefaultLoRAConfig(), 1)
		as, _ := src.NewAdapter(DefaultLoRAConfig(), 1)
		got, err := NewTrainer(b, a, nil).SequenceLogprobs(context.Background(), []Sequence{seq})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := NewTrainer(src, as, nil).SequenceLogprobs(context.Background(), []Sequence{seq})
		const tol = 1e-5
		for i := 1; i < len(want[0]); i++ {
			if d := math.Abs(float64(got[0][i] - want[0][i])); d > tol {
				t.Fatalf("%s: token %d logprob %v, want %v", dtype, i, got[0][i], want[0][i])
			}
		}
		if b.ContextLength() != 64 || b.NumParams() != cfg.NumParams() {
			t.Fatalf("%s: context %d params %d", dtype, b.ContextLength(), b.NumParams())
		}
	}
}

func TestOpenDirRejectsBadCheckpoints(t *testing.T) {
	cfg := model.Config{VocabSize: tokenizer.VocabSize, Dim: 16, Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 8,
		Hidden: 16, MaxSeqLen: 32, RopeTheta: 10000, NormEps: 1e-5}
	w, _ := model.NewWeights(cfg)
	dir := t.TempDir()
	writeLlama(t, dir, w, "F32")
	os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
	if _, err := OpenDir(dir); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("missing shard: %v", err)
	}
	cj, _ := json.Marshal(map[string]any{"model_type": "llama", "vocab_size": 300, "hidden_size": 16, "intermediate_size": 16,
		"num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 32, "rms_norm_eps": 1e-5,
		"rope_scaling": map[string]any{"type": "linear", "factor": 2}})
	os.WriteFile(filepath.Join(dir, "config.json"), cj, 0o644)
	if _, err := OpenDir(dir); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("rope scaling: %v", err)
	}
	if _, err := OpenDir(filepath.Join(dir, "nope")); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("missing dir: %v", err)
	}
}

// TestOpenDirDoesNotHoldTheFiles: loading reads the safetensors files a chunk at a time straight into the
// weights, so what it allocates is about the bfloat16 weights themselves — less than the float32 files it
// reads (reading the files whole first made the peak the files plus the weights). Allocation is counted, not
// resident memory, so the bound does not depend on the machine.
func TestOpenDirDoesNotHoldTheFiles(t *testing.T) {
	cfg := model.Config{VocabSize: tokenizer.VocabSize, Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64,
		Hidden: 688, MaxSeqLen: 256, RopeTheta: 10000, NormEps: 1e-5}
	w, _ := model.NewWeights(cfg)
	w.Init(5)
	dir := t.TempDir()
	writeLlama(t, dir, w, "F32")
	var files int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && filepath.Ext(e.Name()) == ".safetensors" {
			files += info.Size()
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := OpenDir(dir)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	weights := int64(2 * cfg.NumParams())
	// Packing the matrices for the kernel (model.Weights.Pack) allocates their packed layout once more.
	alloc := int64(after.TotalAlloc-before.TotalAlloc) - b.w.PackedBytes()
	t.Logf("files %d bytes, bfloat16 weights %d bytes, allocated while loading %d bytes besides the packing", files, weights, alloc)
	if alloc >= files && !raceEnabled { // under -race the pools' buffers are dropped at random, and reallocated
		t.Fatalf("loading %d bytes of files allocated %d bytes: the files' contents are held", files, alloc)
	}
	if b.NumParams() != cfg.NumParams() {
		t.Fatalf("%d parameters, want %d", b.NumParams(), cfg.NumParams())
	}
}
