// Package servingtest holds helpers for tests that serve chat completions: the built-in base model opened
// once per test binary, and checkpoints produced by a real training step and stored the way a training job
// stores them (objects first, then the row).
package servingtest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// BaseModel is the built-in model the tests serve.
const BaseModel = "trainyard/tiny-chat"

var shared struct {
	once sync.Once
	base *engine.Base
	err  error
}

// Base returns the built-in base model, loaded once and shared by every test of the binary (a Base is
// safe for concurrent use).
func Base(t testing.TB) *engine.Base {
	t.Helper()
	b, err := OpenBase(BaseModel)
	if err != nil {
		t.Fatalf("servingtest: open %s: %v", BaseModel, err)
	}
	return b
}

// OpenBase has the signature of serving.Config.OpenBase and returns the shared built-in model.
func OpenBase(name string) (*engine.Base, error) {
	shared.once.Do(func() { shared.base, shared.err = engine.OpenBuiltin(BaseModel) })
	if name != BaseModel {
		return engine.OpenBuiltin(name)
	}
	return shared.base, shared.err
}

// TrainingExample is the conversation TrainCheckpoint fits: a reply the base model is very unlikely to
// give, so a trained adapter visibly changes what the model samples.
var TrainingExample = []engine.Message{
	{Role: "user", Content: "Say the magic words."},
	{Role: "assistant", Content: "zebra zebra zebra zebra", Trainable: true},
}

// TrainCheckpoint makes one SFT step on TrainingExample, starting from prev (nil = a fresh adapter), and
// records the result as checkpoint step of model m: adapter files in the blob store, then the checkpoint
// row, as a training job does. It returns the trained adapter and the row.
func TrainCheckpoint(t testing.TB, models trainyard.ModelStore, blobs trainyard.BlobStore, m *trainyard.Model,
	step int, prev *engine.Adapter) (*engine.Adapter, *trainyard.Checkpoint) {
	t.Helper()
	ctx := context.Background()
	base := Base(t)
	a := prev
	if a == nil {
		var err error
		if a, err = base.NewAdapter(engine.DefaultLoRAConfig(), 1); err != nil {
			t.Fatalf("servingtest: new adapter: %v", err)
		}
	} else {
		a = a.Clone()
	}
	seq, err := base.RenderTraining(TrainingExample, nil)
	if err != nil {
		t.Fatalf("servingtest: render: %v", err)
	}
	opt := engine.DefaultAdamWConfig()
	opt.LearningRate = 0.02 // one step must move the model far enough to change greedy samples
	if _, err := engine.NewTrainer(base, a, nil).SFTStep(ctx, []engine.Sequence{seq}, opt); err != nil {
		t.Fatalf("servingtest: SFT step: %v", err)
	}
	var weights bytes.Buffer
	if err := a.WriteWeights(&weights); err != nil {
		t.Fatalf("servingtest: write weights: %v", err)
	}
	cfg, err := a.ConfigJSON()
	if err != nil {
		t.Fatalf("servingtest: adapter config: %v", err)
	}
	for name, data := range map[string][]byte{trainyard.AdapterWeightsFile: weights.Bytes(), trainyard.AdapterConfigFile: cfg} {
		if err := blobs.PutCheckpointFile(ctx, m.ID, step, name, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("servingtest: put %s: %v", name, err)
		}
	}
	c := &trainyard.Checkpoint{ModelID: m.ID, Step: step, Metrics: map[string]float64{}}
	if err := models.CreateCheckpoint(ctx, c); err != nil {
		t.Fatalf("servingtest: record checkpoint: %v", err)
	}
	return a, c
}
