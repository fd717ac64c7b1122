package postgres_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
)

func TestCreateAndFindJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := newAccount(t, f.db)

	in := &trainyard.Job{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: trainyard.JobKindSFT,
		Config: json.RawMessage(`{"training_data_url":"s3://b/k","config":{"batch_size":"auto"}}`), WorkflowID: "training-job-x"}
	j, created, err := f.db.CreateJob(ctx, in)
	mustNil(t, err)
	if !created || j.ID == "" || j.Status != trainyard.JobQueued || j.CreatedAt.IsZero() || j.Kind != trainyard.JobKindSFT ||
		j.WorkflowID != "training-job-x" || j.StartedAt != nil || j.Checkpoint != nil || j.Error != nil || len(j.LatestMetrics) != 0 {
		t.Fatalf("CreateJob = %+v created=%v", j, created)
	}
	var cfg map[string]any
	mustNil(t, json.Unmarshal(j.Config, &cfg))
	if cfg["training_data_url"] != "s3://b/k" {
		t.Fatalf("config = %s", j.Config)
	}

	got, err := f.db.FindJob(ctx, f.acct.ID, j.ID)
	mustNil(t, err)
	if got.ID != j.ID || got.ModelID != f.model.ID || got.AccountID != f.acct.ID {
		t.Fatalf("FindJob = %+v", got)
	}
	_, err = f.db.FindJob(ctx, other.ID, j.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.FindJob(ctx, f.acct.ID, "nope")
	wantCode(t, err, trainyard.ENOTFOUND)
	got, err = f.db.GetJob(ctx, j.ID)
	mustNil(t, err)
	if got.ID != j.ID {
		t.Fatal("GetJob returned another job")
	}
	_, err = f.db.GetJob(ctx, fakeID)
	wantCode(t, err, trainyard.ENOTFOUND)

	// A job on another account's model, or an unknown one, is ENOTFOUND.
	for _, bad := range []*trainyard.Job{
		{AccountID: other.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL},
		{AccountID: f.acct.ID, ModelID: fakeID, Kind: trainyard.JobKindRL},
		{AccountID: other.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL, IdempotencyKey: ptr("k")},
	} {
		_, _, err = f.db.CreateJob(ctx, bad)
		wantCode(t, err, trainyard.ENOTFOUND)
	}
	for _, bad := range []*trainyard.Job{
		{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: "dpo"},
		{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL, Status: "DONE"},
		{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL, IdempotencyKey: ptr("")},
		{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL, Config: json.RawMessage(`{bad`)},
	} {
		_, _, err = f.db.CreateJob(ctx, bad)
		wantCode(t, err, trainyard.EINVALID)
	}
}

func TestCreateJobIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := newAccount(t, f.db)
	otherModel := newModel(t, f.db, other)

	first, created, err := f.db.CreateJob(ctx, &trainyard.Job{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL, IdempotencyKey: ptr("req-1")})
	mustNil(t, err)
	if !created {
		t.Fatal("first create: created=false")
	}
	again, created, err := f.db.CreateJob(ctx, &trainyard.Job{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL, IdempotencyKey: ptr("req-1")})
	mustNil(t, err)
	if created || again.ID != first.ID {
		t.Fatalf("retry: created=%v id %s, want the job %s", created, again.ID, first.ID)
	}
	// Keys are per account.
	theirs, created, err := f.db.CreateJob(ctx, &trainyard.Job{AccountID: other.ID, ModelID: otherModel.ID, Kind: trainyard.JobKindRL, IdempotencyKey: ptr("req-1")})
	mustNil(t, err)
	if !created || theirs.ID == first.ID {
		t.Fatal("another account's key collided")
	}

	// Concurrent retries create exactly one job.
	const n = 8
	var wg sync.WaitGroup
	ids := make([]string, n)
	createdBy := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, c, err := f.db.CreateJob(ctx, &trainyard.Job{AccountID: f.acct.ID, ModelID: f.model.ID, Kind: trainyard.JobKindRL, IdempotencyKey: ptr("race")})
			errs[i], createdBy[i] = err, c
			if j != nil {
				ids[i] = j.ID
			}
		}()
	}
	wg.Wait()
	creators := 0
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("racer %d: id %s err %v, want %s", i, ids[i], errs[i], ids[0])
		}
		if createdBy[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Fatalf("%d racers report created, want 1", creators)
	}
}

func TestListJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	m2 := newModel(t, f.db, f.acct)
	other := newAccount(t, f.db)
	newJob(t, f.db, newModel(t, f.db, other)) // never listed for f.acct

	var all []string // creation order
	for i := range 5 {
		m := f.model
		if i%2 == 1 {
			m = m2
		}
		all = append(all, newJob(t, f.db, m).ID)
	}
	ids := func(p *trainyard.Page[*trainyard.Job]) []string {
		out := []string{}
		for _, j := range p.Items {
			out = append(out, j.ID)
		}
		return out
	}
	eq := func(name string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %v, want %v", name, got, want)
			}
		}
	}

	p, err := f.db.ListJobs(ctx, f.acct.ID, "", trainyard.ListOptions{Limit: 2})
	mustNil(t, err)
	eq("newest first", ids(p), all[4], all[3])
	if !p.HasMore {
		t.Fatal("has_more = false on the first page")
	}
	p, err = f.db.ListJobs(ctx, f.acct.ID, "", trainyard.ListOptions{Limit: 2, After: all[1]})
	mustNil(t, err)
	eq("after", ids(p), all[0])
	if p.HasMore {
		t.Fatal("has_more on the last page")
	}
	p, err = f.db.ListJobs(ctx, f.acct.ID, "", trainyard.ListOptions{Order: trainyard.OrderAsc, After: all[2]})
	mustNil(t, err)
	eq("asc", ids(p), all[3], all[4])
	p, err = f.db.ListJobs(ctx, f.acct.ID, m2.ID, trainyard.ListOptions{})
	mustNil(t, err)
	eq("by model", ids(p), all[3], all[1])
	p, err = f.db.ListJobs(ctx, f.acct.ID, "not-a-model", trainyard.ListOptions{})
	mustNil(t, err)
	eq("malformed model", ids(p))
	p, err = f.db.ListJobs(ctx, other.ID, f.model.ID, trainyard.ListOptions{})
	mustNil(t, err)
	eq("another account's model", ids(p))
	_, err = f.db.ListJobs(ctx, f.acct.ID, "", trainyard.ListOptions{After: "zzz"})
	wantCode(t, err, trainyard.EINVALID)
}

func TestUpdateJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	started := time.Now().UTC().Truncate(time.Microsecond)

	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{
		Status: ptr(trainyard.JobRunning), RunID: ptr("run-1"), StartedAt: &started, TotalSteps: ptr(4),
	}))
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{CurrentStep: ptr(2), LatestMetrics: map[string]float64{"loss": 1.5}}))
	got, err := f.db.GetJob(ctx, j.ID)
	mustNil(t, err)
	if got.Status != trainyard.JobRunning || got.RunID != "run-1" || !got.StartedAt.Equal(started) ||
		got.TotalSteps != 4 || got.CurrentStep != 2 || got.LatestMetrics["loss"] != 1.5 {
		t.Fatalf("after updates: %+v", got)
	}

	// Progress never goes backwards: a retried or reset run that reports
	// an earlier step leaves the step and its metrics alone.
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{CurrentStep: ptr(1), LatestMetrics: map[string]float64{"loss": 9}, SavedStep: ptr(2)}))
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{SavedStep: ptr(1)}))
	if got, err = f.db.GetJob(ctx, j.ID); err != nil || got.CurrentStep != 2 || got.LatestMetrics["loss"] != 1.5 || got.SavedStep != 2 {
		t.Fatalf("after an earlier step: %+v %v", got, err)
	}

	finished := started.Add(time.Minute)
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobCompleted), FinishedAt: &finished, Checkpoint: ptr(1), CurrentStep: ptr(4)}))
	// A late failure or cancel cannot rewrite the outcome, but progress
	// fields still update.
	later := finished.Add(time.Hour)
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobCancelled), Error: ptr("late"), FinishedAt: &later, LatestMetrics: map[string]float64{"loss": 0.5}}))
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobRunning)}))
	got, err = f.db.GetJob(ctx, j.ID)
	mustNil(t, err)
	if got.Status != trainyard.JobCompleted || got.Error != nil || !got.FinishedAt.Equal(finished) || *got.Checkpoint != 1 || got.LatestMetrics["loss"] != 0.5 {
		t.Fatalf("terminal job changed: %+v", got)
	}

	wantCode(t, f.db.UpdateJob(ctx, fakeID, trainyard.JobUpdate{}), trainyard.ENOTFOUND)
	wantCode(t, f.db.UpdateJob(ctx, "x", trainyard.JobUpdate{}), trainyard.ENOTFOUND)
	wantCode(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobStatus("SLEEPING"))}), trainyard.EINVALID)
	wantCode(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{CurrentStep: ptr(-1)}), trainyard.EINVALID)
}

func TestFailedJobKeepsError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobFailed), Error: ptr("loss is NaN")}))
	got, err := f.db.FindJob(ctx, f.acct.ID, j.ID)
	mustNil(t, err)
	if got.Status != trainyard.JobFailed || got.Error == nil || *got.Error != "loss is NaN" {
		t.Fatalf("failed job = %+v", got)
	}
}

// TestPausedJob: PAUSED is a status of its own that keeps the job unfinished
// (it stays first in its model's queue), the pause request is a flag the
// Train activity reads, and a paused job can still be closed.
func TestPausedJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	later := newJob(t, f.db, f.model)
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobRunning), PauseRequested: ptr(true)}))
	got, err := f.db.GetJob(ctx, j.ID)
	mustNil(t, err)
	if !got.PauseRequested || got.Status != trainyard.JobRunning {
		t.Fatalf("pause request not stored: %+v", got)
	}
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobPaused), PauseRequested: ptr(false)}))
	got, err = f.db.FindJob(ctx, f.acct.ID, j.ID)
	mustNil(t, err)
	if got.PauseRequested || got.Status != trainyard.JobPaused {
		t.Fatalf("paused job = %+v", got)
	}
	head, err := f.db.OldestUnfinishedJob(ctx, f.model.ID)
	mustNil(t, err)
	if head.ID != j.ID {
		t.Fatalf("the paused job lost its turn to %s (later job %s)", head.ID, later.ID)
	}
	open, err := f.db.UnfinishedJobs(ctx, time.Now().Add(time.Minute), 10)
	mustNil(t, err)
	if len(open) != 2 {
		t.Fatalf("unfinished jobs = %d, want the paused and the queued one", len(open))
	}
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobCancelled)}))
	mustNil(t, f.db.UpdateJob(ctx, j.ID, trainyard.JobUpdate{Status: ptr(trainyard.JobPaused)}))
	if got, _ := f.db.GetJob(ctx, j.ID); got.Status != trainyard.JobCancelled {
		t.Fatalf("a cancelled job went back to %s", got.Status)
	}
}
