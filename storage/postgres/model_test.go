package postgres_test

import (
	"context"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/storage/postgres"
)

func TestModels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := newAccount(t, f.db)

	m := f.model
	if m.ID == "" || m.CreatedAt.IsZero() {
		t.Fatalf("CreateModel did not fill ID/CreatedAt: %+v", m)
	}
	dup := &trainyard.Model{AccountID: f.acct.ID, Entity: m.Entity, Project: m.Project, Name: m.Name, BaseModel: "b"}
	wantCode(t, f.db.CreateModel(ctx, dup), trainyard.ECONFLICT)

	// Another account may use the same names.
	same := &trainyard.Model{AccountID: other.ID, Entity: m.Entity, Project: m.Project, Name: m.Name, BaseModel: "b", RunID: ptr("run-1")}
	mustNil(t, f.db.CreateModel(ctx, same))

	got, err := f.db.FindModel(ctx, f.acct.ID, m.ID)
	mustNil(t, err)
	if got.ID != m.ID || got.Name != m.Name || got.BaseModel != m.BaseModel || got.RunID != nil || !got.CreatedAt.Equal(m.CreatedAt) {
		t.Fatalf("FindModel = %+v, want %+v", got, m)
	}
	got, err = f.db.FindModel(ctx, other.ID, same.ID)
	mustNil(t, err)
	if got.RunID == nil || *got.RunID != "run-1" {
		t.Fatalf("RunID = %v", got.RunID)
	}

	_, err = f.db.FindModel(ctx, other.ID, m.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.FindModel(ctx, f.acct.ID, fakeID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.FindModel(ctx, f.acct.ID, "not-a-uuid")
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.FindModel(ctx, "garbage", m.ID)
	wantCode(t, err, trainyard.ENOTFOUND)

	got, err = f.db.FindModelByName(ctx, f.acct.ID, m.Entity, m.Project, m.Name)
	mustNil(t, err)
	if got.ID != m.ID {
		t.Fatalf("FindModelByName = %s, want %s", got.ID, m.ID)
	}
	_, err = f.db.FindModelByName(ctx, f.acct.ID, m.Entity, m.Project, "nope")
	wantCode(t, err, trainyard.ENOTFOUND)

	for _, bad := range []*trainyard.Model{
		{AccountID: f.acct.ID, Entity: "e", Project: "", Name: "n", BaseModel: "b"},
		{AccountID: f.acct.ID, Entity: "e", Project: "p", Name: "n", BaseModel: ""},
		{ID: "nope", AccountID: f.acct.ID, Entity: "e", Project: "p", Name: "n", BaseModel: "b"},
	} {
		wantCode(t, f.db.CreateModel(ctx, bad), trainyard.EINVALID)
	}
	wantCode(t, f.db.CreateModel(ctx, &trainyard.Model{AccountID: fakeID, Entity: "e", Project: "p", Name: "n", BaseModel: "b"}), trainyard.ENOTFOUND)
}

func TestDeleteModelCascades(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	keep := newModel(t, f.db, f.acct)
	other := newAccount(t, f.db)

	newCheckpoints(t, f.db, f.model.ID, 2, 1, 3)
	keptCkpt := newCheckpoints(t, f.db, keep.ID, 1)[0]
	job := newJob(t, f.db, f.model)
	_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: job.ID, Seq: 1, Type: trainyard.EventTrainingStarted})
	mustNil(t, err)
	rec := &trainyard.LogRecord{ModelID: f.model.ID, Split: "val", Step: 3, NumGroups: 1, NumTrajectories: 1}
	mustNil(t, f.db.SaveLog(ctx, rec, []trainyard.StoredTrajectory{{Reward: 1, Body: []byte(`{"reward":1}`)}}))

	_, err = f.db.DeleteModel(ctx, other.ID, f.model.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.DeleteModel(ctx, f.acct.ID, "junk")
	wantCode(t, err, trainyard.ENOTFOUND)

	deleted, err := f.db.DeleteModel(ctx, f.acct.ID, f.model.ID)
	mustNil(t, err)
	if len(deleted) != 3 || deleted[0].Step != 1 || deleted[1].Step != 2 || deleted[2].Step != 3 {
		t.Fatalf("deleted checkpoints = %v, want steps 1,2,3", steps(deleted))
	}
	_, err = f.db.FindModel(ctx, f.acct.ID, f.model.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.GetJob(ctx, job.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.LastEvent(ctx, job.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.ListTrajectories(ctx, rec.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	var rows int
	mustNil(t, postgres.PoolOf(f.db).QueryRow(ctx, `SELECT count(*) FROM trajectories`).Scan(&rows))
	if rows != 0 {
		t.Fatalf("%d trajectory rows left", rows)
	}

	// The other model is untouched; a second delete is ENOTFOUND.
	c, err := f.db.FindCheckpoint(ctx, keep.ID, 1)
	mustNil(t, err)
	if c.ID != keptCkpt.ID {
		t.Fatal("the other model's checkpoint changed")
	}
	_, err = f.db.DeleteModel(ctx, f.acct.ID, f.model.ID)
	wantCode(t, err, trainyard.ENOTFOUND)

	// A model without checkpoints deletes to an empty list.
	deleted, err = f.db.DeleteModel(ctx, f.acct.ID, newModel(t, f.db, f.acct).ID)
	mustNil(t, err)
	if len(deleted) != 0 {
		t.Fatalf("deleted = %v", steps(deleted))
	}
}

func steps(cs []*trainyard.Checkpoint) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Step
	}
	return out
}
