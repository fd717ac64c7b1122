package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
)

// TestGemma3TextVocabulary opens a snapshot shaped like Gemma 3's text models: 262,144 embedding rows
// under a tokenizer.json whose last id, <image_soft_token> (262,144), is an added token of the vision
// tower. The snapshot opens and chats; a prompt that spells that token out is refused as invalid input
// instead of reaching past the embedding.
func TestGemma3TextVocabulary(t *testing.T) {
	cfg := model.Config{Arch: "gemma3_text", VocabSize: 262144, Dim: 16, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 8,
		Hidden: 32, MaxSeqLen: 256, RopeTheta: 1000000, RopeLocalTheta: 10000, NormEps: 1e-6, TiedEmbeddings: true,
		QKNorm: true, NormPlusOne: true, SandwichNorm: true, EmbedScale: true, GeluTanh: true, QueryScalar: 8,
		SlidingPattern: 2, SlidingWindow: 16}
	dir := t.TempDir()
	hfsnapshot.WriteTemplateSnapshot(t, dir, cfg, 7, hfsnapshot.Gemma3Tokenizer, "gemma3")
	b, err := OpenSnapshot("test/gemma3", dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Tokenizer().VocabSize(); n != 262145 || b.VocabSize() != 262144 {
		t.Fatalf("tokenizer %d ids, embedding %d rows", n, b.VocabSize())
	}
	ctx := context.Background()
	prompt, err := b.RenderPrompt([]Message{{Role: "user", Content: "Olá 🫠"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sample(ctx, nil, prompt, SampleParams{MaxTokens: 4, Seed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	prompt, err = b.RenderPrompt([]Message{{Role: "user", Content: "look: <image_soft_token>"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Sample(ctx, nil, prompt, SampleParams{MaxTokens: 4, Seed: 1}, nil)
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "262144") {
		t.Errorf("a prompt with <image_soft_token>: %v, want invalid input naming the id", err)
	}
}

// TestSnapshotVocabularyTooSmall: an embedding without rows for some of the vocabulary's own tokens is
// still refused (here Qwen3's 151,643 BPE tokens against 151,000 rows), naming config.json's vocab_size.
func TestSnapshotVocabularyTooSmall(t *testing.T) {
	cfg := hfsnapshot.TinyQwen3
	cfg.VocabSize = 151000
	dir := t.TempDir()
	hfsnapshot.WriteQwen3Snapshot(t, dir, cfg, 3)
	_, err := OpenSnapshot("test/small", dir)
	var se *SnapshotError
	if !errors.As(err, &se) || se.Field != "vocab_size" || !errors.Is(err, ErrInvalidInput) {
		t.Errorf("OpenSnapshot = %v, want a SnapshotError on vocab_size", err)
	}
}
