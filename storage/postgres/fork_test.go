package postgres_test

import (
	"context"
	"testing"

	"github.com/trainyard/trainyard"
)

// TestCreateForkedModel: a fork and its step 0 (the source's metrics) are
// created together; only training writes later steps, never step 0; the
// source must be the account's own and still exist; a taken name is a
// conflict that leaves nothing behind.
func TestCreateForkedModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	src := newCheckpoints(t, f.db, f.model.ID, 1, 2)[1]
	policy := &trainyard.CheckpointPolicy{KeepLast: 2}
	fork := &trainyard.Model{AccountID: f.acct.ID, Entity: f.acct.Entity, Project: "proj", Name: unique("fork"),
		BaseModel: f.model.BaseModel, CheckpointPolicy: policy}
	zero, err := f.db.CreateForkedModel(ctx, fork, src)
	mustNil(t, err)
	if zero.Step != 0 || zero.ModelID != fork.ID || zero.Metrics["loss"] != 2 || zero.JobID != nil || fork.ForkedFrom != src.ID {
		t.Fatalf("step 0 = %+v, fork = %+v", zero, fork)
	}
	got, err := f.db.FindModel(ctx, f.acct.ID, fork.ID)
	mustNil(t, err)
	if got.ForkedFrom != src.ID || got.CheckpointPolicy == nil || got.CheckpointPolicy.KeepLast != 2 {
		t.Fatalf("stored fork = %+v", got)
	}
	latest, err := f.db.LatestCheckpoint(ctx, fork.ID)
	mustNil(t, err)
	if latest.ID != zero.ID {
		t.Fatalf("the fork's newest checkpoint is %+v, want its step 0", latest)
	}
	// Training writes from step 1; step 0 is the fork's alone.
	wantCode(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: fork.ID, Step: 0}), trainyard.EINVALID)
	mustNil(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: fork.ID, Step: 1}))

	// The name is taken: nothing is created.
	dup := &trainyard.Model{AccountID: f.acct.ID, Entity: f.acct.Entity, Project: "proj", Name: fork.Name, BaseModel: "base"}
	_, err = f.db.CreateForkedModel(ctx, dup, src)
	wantCode(t, err, trainyard.ECONFLICT)

	// Another account cannot fork this account's checkpoint.
	other := newAccount(t, f.db)
	stranger := &trainyard.Model{AccountID: other.ID, Entity: other.Entity, Project: "proj", Name: unique("fork"), BaseModel: "base"}
	_, err = f.db.CreateForkedModel(ctx, stranger, src)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.FindModelByName(ctx, other.ID, other.Entity, "proj", stranger.Name)
	wantCode(t, err, trainyard.ENOTFOUND)

	// A source deleted meanwhile is not found; its fork keeps its step 0.
	_, _, err = f.db.DeleteCheckpoints(ctx, f.model.ID, []int{2})
	mustNil(t, err)
	late := &trainyard.Model{AccountID: f.acct.ID, Entity: f.acct.Entity, Project: "proj", Name: unique("fork"), BaseModel: "base"}
	_, err = f.db.CreateForkedModel(ctx, late, src)
	wantCode(t, err, trainyard.ENOTFOUND)
	got, err = f.db.FindModel(ctx, f.acct.ID, fork.ID)
	mustNil(t, err)
	if got.ForkedFrom != "" {
		t.Fatalf("forked_from of a deleted source = %q", got.ForkedFrom)
	}
	if _, err := f.db.FindCheckpoint(ctx, fork.ID, 0); err != nil {
		t.Fatalf("the fork lost its step 0: %v", err)
	}
}
