package activities

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard"
)

// trainSFT runs a prepared SFT job through its turn, steps and completion
// and returns the checkpoint step it wrote.
func (f *fixture) trainSFT(t *testing.T, model *trainyard.Model, name string) int {
	t.Helper()
	job, total := f.prepareSFT(t, model, name, 4, 2)
	var turn WaitTurnResult
	must(t, f.run(t, f.acts.WaitTurn, WaitTurnInput{JobID: job.ID}, &turn))
	var r TrainResult
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: job.ID, BaseStep: turn.BaseStep, TotalSteps: total}, &r))
	must(t, f.run(t, f.acts.Complete, CompleteInput{JobID: job.ID, CheckpointStep: turn.BaseStep + 1, TotalSteps: total, Metrics: r.Metrics}, nil))
	return turn.BaseStep + 1
}

// TestForkContinuesLikeItsSource: a fork starts from its step 0, a copy of
// the source checkpoint with its optimizer state, so the same job trained
// on the fork (0 -> 1) and on the source (2 -> 3) writes the same adapter
// and optimizer state, byte for byte; with fresh optimizer moments it would
// not.
func TestForkContinuesLikeItsSource(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	ctx := context.Background()
	src := f.model
	f.seedCheckpoint(t, src)
	if step := f.trainSFT(t, src, "warmup"); step != 2 {
		t.Fatalf("warm-up wrote step %d", step)
	}
	source, err := f.db.FindCheckpoint(ctx, src.ID, 2)
	must(t, err)
	fork := &trainyard.Model{ID: uuid.Must(uuid.NewV7()).String(), AccountID: f.acct.ID, Entity: f.acct.Entity, Project: "p",
		Name: "fork", BaseModel: src.BaseModel}
	must(t, f.blobs.CopyCheckpointFiles(ctx, src.ID, 2, fork.ID, 0))
	_, err = f.db.CreateForkedModel(ctx, fork, source)
	must(t, err)

	if step := f.trainSFT(t, src, "same"); step != 3 {
		t.Fatalf("the source's job wrote step %d", step)
	}
	if step := f.trainSFT(t, fork, "same-on-fork"); step != 1 {
		t.Fatalf("the fork's first job wrote step %d, want 1", step)
	}
	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.OptimizerStateFile} {
		if !bytes.Equal(f.checkpointFile(t, src, 3, name), f.checkpointFile(t, fork, 1, name)) {
			t.Fatalf("%s of the fork's step 1 differs from the source's step 3", name)
		}
	}
	if bytes.Equal(f.checkpointFile(t, src, 2, trainyard.AdapterWeightsFile), f.checkpointFile(t, fork, 1, trainyard.AdapterWeightsFile)) {
		t.Fatal("the fork's job did not train")
	}
}
