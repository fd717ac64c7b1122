package main

import (
	"path/filepath"
	"testing"

	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
)

// TestServeGemma3 is issue 22's Gemma 3 report through HTTP: `serve` on a random-weight Gemma3ForCausalLM
// snapshot (hfsnapshot.TinyGemma3: sandwich (1 + weight) norms, q/k norms, head_dim ≠ hidden/heads, one KV
// head, a local layer with an 8-position window and a global one) with Gemma 3's real 262,144-token
// tokenizer and chat template (the system prompt folded into the first user turn, every message trimmed,
// turns closed by <end_of_turn>). Rollouts sampled by the service train in an RL job with their sampled ids,
// plain answers in an SFT job, and both checkpoints chat.
func TestServeGemma3(t *testing.T) {
	models := t.TempDir()
	const base = "google/gemma-3-tiny"
	cfg := hfsnapshot.TinyGemma3
	hfsnapshot.WriteTemplateSnapshot(t, filepath.Join(models, base), cfg, 3, hfsnapshot.Gemma3Tokenizer, "gemma3")
	answer := serveAndTrain(t, models, base, "gemma")
	// The rollouts' prompt alone is longer than the local layer's window, so sampling, the RL step and the
	// SFT step (whose conversations are longer still) all attend across it.
	if n := answer["usage"].(map[string]any)["prompt_tokens"].(float64); int(n) <= cfg.SlidingWindow {
		t.Fatalf("prompt of %v tokens does not cross the %d-position window", n, cfg.SlidingWindow)
	}
}
