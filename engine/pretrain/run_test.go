package pretrain

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// TestRunSmall runs the recipe's code path on a tiny model for a few steps, twice, and checks the output is
// identical (reproducible) and loadable, and that InitFrom continues from it.
func TestRunSmall(t *testing.T) {
	cfg := model.Config{VocabSize: tokenizer.VocabSize, Dim: 32, Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 16,
		Hidden: 64, MaxSeqLen: 128, RopeTheta: 10000, NormEps: 1e-5, TiedEmbeddings: true}
	run := func(dir, init string) []byte {
		var log bytes.Buffer
		o := Options{OutDir: dir, Config: cfg, BatchTokens: 256, MaxSeqLen: 128, InitFrom: init, Log: &log,
			Stages: []Stage{{Steps: 3, WarmupSteps: 1, PeakLR: 1e-3, Seed: 5}, {Steps: 2, WarmupSteps: 1, PeakLR: 5e-4, Seed: 6}}}
		if err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "stage 1 step 1 loss") {
			t.Fatalf("log lacks the last step:\n%s", log.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := t.TempDir(), t.TempDir()
	wa, wb := run(a, ""), run(b, "")
	if !bytes.Equal(wa, wb) {
		t.Fatal("two runs of the same options wrote different weights")
	}
	if wc := run(t.TempDir(), a); bytes.Equal(wc, wa) {
		t.Fatal("continuing from a checkpoint changed nothing")
	}
}
