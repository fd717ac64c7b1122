package activities

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// putCheckpoint stores a checkpoint's objects and row.
func (f *fixture) putCheckpoint(t *testing.T, model *trainyard.Model, step int, metrics map[string]float64) *trainyard.Checkpoint {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.AdapterConfigFile} {
		must(t, f.blobs.PutCheckpointFile(ctx, model.ID, step, name, bytes.NewReader([]byte(name)), int64(len(name))))
	}
	c := &trainyard.Checkpoint{ModelID: model.ID, Step: step, Metrics: metrics}
	must(t, f.db.CreateCheckpoint(ctx, c))
	return c
}

// TestApplyRetention: after a job, the model's policy deletes the
// checkpoints it does not keep, rows and objects; the newest, the best by
// the metric, a fork's source and a checkpoint served recently stay, one
// served long ago does not; objects an interrupted deletion left behind go
// too, a running job's next checkpoint does not. A second run finds
// nothing to do.
func TestApplyRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{ServedWindow: 10 * time.Minute}, nil)
	ctx := context.Background()
	m := f.model
	var cps []*trainyard.Checkpoint
	for step := 1; step <= 7; step++ {
		cps = append(cps, f.putCheckpoint(t, m, step, map[string]float64{"val/reward": []float64{0, 0.9, 0.1, 0.2, 0.3, 0.1, 0.5, 0.2}[step]}))
	}
	fork := &trainyard.Model{ID: uuid.Must(uuid.NewV7()).String(), AccountID: f.acct.ID, Entity: f.acct.Entity, Project: "p", Name: "fork", BaseModel: m.BaseModel}
	must(t, f.blobs.CopyCheckpointFiles(ctx, m.ID, 2, fork.ID, 0))
	_, err := f.db.CreateForkedModel(ctx, fork, cps[1]) // step 2
	must(t, err)
	must(t, f.db.MarkCheckpointServed(ctx, cps[2].ID, time.Now()))                 // step 3: being served
	must(t, f.db.MarkCheckpointServed(ctx, cps[4].ID, time.Now().Add(-time.Hour))) // step 5: long ago
	// Step 6's row went but its objects stayed (a deletion cut short);
	// step 8's objects are a running job's, before its row.
	_, _, err = f.db.DeleteCheckpoints(ctx, m.ID, []int{6})
	must(t, err)
	must(t, f.blobs.PutCheckpointFile(ctx, m.ID, 8, trainyard.AdapterWeightsFile, bytes.NewReader([]byte("w")), 1))
	_, err = f.db.SetCheckpointPolicy(ctx, f.acct.ID, m.ID, &trainyard.CheckpointPolicy{KeepLast: 1,
		KeepBestBy: &trainyard.MetricGoal{Metric: "val/reward", Direction: trainyard.DirectionMax}})
	must(t, err)
	job := f.newJob(t, m, trainyard.JobKindRL, jobspec.JobConfig{}, nil)

	var res RetentionResult
	must(t, f.run(t, f.acts.ApplyRetention, RetentionInput{JobID: job.ID}, &res))
	if fmt.Sprint(res.Deleted, res.Swept) != "[4 5] [6]" {
		t.Fatalf("deleted %v, swept %v; want [4 5] [6]", res.Deleted, res.Swept)
	}
	stored, err := f.blobs.CheckpointSteps(ctx, m.ID)
	must(t, err)
	if fmt.Sprint(stored) != "[1 2 3 7 8]" {
		t.Fatalf("objects left for steps %v, want [1 2 3 7 8]", stored)
	}
	page, err := f.db.ListCheckpoints(ctx, m.ID, trainyard.ListOptions{Limit: 10})
	must(t, err)
	if len(page.Items) != 4 {
		t.Fatalf("%d rows left, want 1 (best), 2 (fork source), 3 (served) and 7 (newest)", len(page.Items))
	}
	res = RetentionResult{}
	must(t, f.run(t, f.acts.ApplyRetention, RetentionInput{JobID: job.ID}, &res))
	if len(res.Deleted)+len(res.Swept) != 0 {
		t.Fatalf("a second run deleted %v, swept %v", res.Deleted, res.Swept)
	}
	// A model without a policy keeps everything; a deleted job is no error.
	other := f.newModel(t)
	f.putCheckpoint(t, other, 1, nil)
	f.putCheckpoint(t, other, 2, nil)
	res = RetentionResult{}
	must(t, f.run(t, f.acts.ApplyRetention, RetentionInput{JobID: f.newJob(t, other, trainyard.JobKindRL, jobspec.JobConfig{}, nil).ID}, &res))
	if len(res.Deleted)+len(res.Swept) != 0 {
		t.Fatalf("no policy, yet deleted %v", res.Deleted)
	}
	must(t, f.run(t, f.acts.ApplyRetention, RetentionInput{JobID: uuid.Must(uuid.NewV7()).String()}, &res))
}
