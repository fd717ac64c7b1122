package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
)

// TestCheckpointPolicy: a policy is stored with the model or set later,
// read back as set, removed with nil, and an invalid one is refused.
func TestCheckpointPolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if f.model.CheckpointPolicy != nil {
		t.Fatalf("a new model has a policy: %+v", f.model.CheckpointPolicy)
	}
	p := &trainyard.CheckpointPolicy{KeepLast: 3, KeepBestBy: &trainyard.MetricGoal{Metric: "val/reward", Direction: trainyard.DirectionMax}}
	m, err := f.db.SetCheckpointPolicy(ctx, f.acct.ID, f.model.ID, p)
	mustNil(t, err)
	if fmt.Sprint(*m.CheckpointPolicy) != fmt.Sprint(*p) || *m.CheckpointPolicy.KeepBestBy != *p.KeepBestBy {
		t.Fatalf("policy = %+v", m.CheckpointPolicy)
	}
	got, err := f.db.FindModelByName(ctx, f.acct.ID, f.model.Entity, f.model.Project, f.model.Name)
	mustNil(t, err)
	if got.CheckpointPolicy == nil || got.CheckpointPolicy.KeepBestBy.Metric != "val/reward" {
		t.Fatalf("stored policy = %+v", got.CheckpointPolicy)
	}
	m, err = f.db.SetCheckpointPolicy(ctx, f.acct.ID, f.model.ID, nil)
	mustNil(t, err)
	if m.CheckpointPolicy != nil {
		t.Fatalf("policy after removal = %+v", m.CheckpointPolicy)
	}
	_, err = f.db.SetCheckpointPolicy(ctx, f.acct.ID, f.model.ID, &trainyard.CheckpointPolicy{KeepLast: 0})
	wantCode(t, err, trainyard.EINVALID)
	_, err = f.db.SetCheckpointPolicy(ctx, newAccount(t, f.db).ID, f.model.ID, p)
	wantCode(t, err, trainyard.ENOTFOUND)
}

// TestPruneCheckpoints: the chooser sees every checkpoint with its fork and
// serving marks, the steps it picks are deleted (never the newest), and the
// deleted rows come back.
func TestPruneCheckpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	cps := newCheckpoints(t, f.db, f.model.ID, 1, 2, 3, 4, 5)
	fork := &trainyard.Model{AccountID: f.acct.ID, Entity: f.acct.Entity, Project: "proj", Name: unique("fork"), BaseModel: "base"}
	_, err := f.db.CreateForkedModel(ctx, fork, cps[1]) // step 2
	mustNil(t, err)
	served := time.Now().UTC().Truncate(time.Microsecond)
	mustNil(t, f.db.MarkCheckpointServed(ctx, cps[2].ID, served))                 // step 3
	mustNil(t, f.db.MarkCheckpointServed(ctx, cps[2].ID, served.Add(-time.Hour))) // never moves back
	mustNil(t, f.db.MarkCheckpointServed(ctx, fakeID, served))                    // a deleted checkpoint is no error

	var seen []string
	deleted, err := f.db.PruneCheckpoints(ctx, f.model.ID, func(all []trainyard.CheckpointUsage) []int {
		for _, c := range all {
			seen = append(seen, fmt.Sprintf("%d fork=%v served=%v", c.Checkpoint.Step, c.ForkSource, c.LastServed.Equal(served)))
		}
		return []int{1, 4, 5, 9}
	})
	mustNil(t, err)
	if want := "[1 fork=false served=false 2 fork=true served=false 3 fork=false served=true 4 fork=false served=false 5 fork=false served=false]"; fmt.Sprint(seen) != want {
		t.Fatalf("chooser saw %v", seen)
	}
	var steps []int
	for _, c := range deleted {
		steps = append(steps, c.Step)
	}
	if fmt.Sprint(steps) != "[1 4]" {
		t.Fatalf("deleted %v, want [1 4] (5 is the newest, 9 does not exist)", steps)
	}
	page, err := f.db.ListCheckpoints(ctx, f.model.ID, trainyard.ListOptions{Limit: 10})
	mustNil(t, err)
	if len(page.Items) != 3 || page.Items[0].Step != 2 || page.Items[2].Step != 5 {
		t.Fatalf("left %d checkpoints", len(page.Items))
	}
	none, err := f.db.PruneCheckpoints(ctx, newModel(t, f.db, f.acct).ID, func([]trainyard.CheckpointUsage) []int {
		t.Fatal("chooser called for a model without checkpoints")
		return nil
	})
	mustNil(t, err)
	if len(none) != 0 {
		t.Fatalf("deleted %v of an empty model", none)
	}
}
