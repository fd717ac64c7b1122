package engine

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// writeGemma3Snapshot writes a tiny random-weight Gemma3ForConditionalGeneration snapshot on the byte
// tokenizer: config.json with the text model in text_config (an 8-position window that prompts cross,
// every third layer global), its weights under model.language_model. beside a vision-tower tensor, as
// transformers ≥ 4.52 saves them.
func writeGemma3Snapshot(t *testing.T) (string, model.Config) {
	t.Helper()
	text := map[string]any{"model_type": "gemma3_text", "vocab_size": tokenizer.VocabSize, "hidden_size": 32,
		"intermediate_size": 64, "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 1,
		"head_dim": 16, "max_position_embeddings": 512, "sliding_window": 8, "sliding_window_pattern": 3,
		"query_pre_attn_scalar": 16, "rms_norm_eps": 1e-6}
	js, err := json.Marshal(map[string]any{"architectures": []string{"Gemma3ForConditionalGeneration"},
		"model_type": "gemma3", "text_config": text, "vision_config": map[string]any{"model_type": "siglip_vision_model"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := model.ParseHFConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Init(5)
	for _, ts := range w.Tensors() { // as tinyBase: attention that mixes positions, so LoRA fits fast
		if len(ts.Shape) == 2 {
			for i := range ts.Data {
				ts.Data[i] *= 5
			}
		}
	}
	ts := model.SafetensorsList(w.Tensors())
	for i := range ts {
		ts[i].Name = "model.language_model." + strings.TrimPrefix(ts[i].Name, "model.")
	}
	ts = append(ts, safetensors.Tensor{Name: "model.vision_tower.vision_model.post_layernorm.weight", Shape: []int{4},
		Data: []float32{1, 1, 1, 1}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := safetensors.Write(f, ts, map[string]string{"format": "pt"}, "BF16"); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// TestGemma3Snapshot: a Gemma 3 snapshot is listed (InspectSnapshot, what `trainyard models list` and the
// catalog read), opens, samples, and trains: an RL step on its own rollouts and SFT steps that lower the
// loss of sequences longer than its window.
func TestGemma3Snapshot(t *testing.T) {
	dir, cfg := writeGemma3Snapshot(t)
	info, err := InspectSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Architecture != "gemma3" || info.Params != cfg.NumParams() || info.DType != "BF16" || info.Memory.Total() == 0 {
		t.Fatalf("info %+v", info)
	}
	b, err := OpenSnapshot("google/gemma-3-tiny", dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := b.NewAdapter(DefaultLoRAConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tr := NewTrainer(b, a, nil)
	batch, _ := rollout(t, b, a, 1, 2)
	st, err := tr.RLStep(ctx, batch, RLConfig{}, DefaultAdamWConfig())
	if err != nil || math.IsNaN(st["loss"]) {
		t.Fatalf("RL step: %v %v", st, err)
	}
	seq, err := b.RenderTraining([]Message{{Role: "user", Content: "Name three planets."},
		{Role: "assistant", Content: "Mercury, Venus, Earth.", Trainable: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(seq.Tokens) <= 2*cfg.SlidingWindow {
		t.Fatalf("sequence of %d tokens does not cross the window", len(seq.Tokens))
	}
	opt := DefaultAdamWConfig()
	opt.LearningRate = 1e-2
	var first, last float64
	for i := range 40 {
		st, err := tr.SFTStep(ctx, []Sequence{seq}, opt)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = st["loss"]
		}
		last = st["loss"]
	}
	if !(last < first/2) {
		t.Fatalf("SFT loss %.3f -> %.3f did not halve", first, last)
	}
}
