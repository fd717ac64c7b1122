package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
)

func TestOldestUnfinishedJobIsTheHeadOfTheModelsQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := newModel(t, f.db, f.acct)

	_, err := f.db.OldestUnfinishedJob(ctx, f.model.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.OldestUnfinishedJob(ctx, "not-a-uuid")
	wantCode(t, err, trainyard.ENOTFOUND)

	first, second, third := newJob(t, f.db, f.model), newJob(t, f.db, f.model), newJob(t, f.db, f.model)
	newJob(t, f.db, other)
	head := func() string {
		t.Helper()
		j, err := f.db.OldestUnfinishedJob(ctx, f.model.ID)
		mustNil(t, err)
		return j.ID
	}
	if got := head(); got != first.ID {
		t.Fatalf("head = %s, want the first job %s", got, first.ID)
	}
	running := trainyard.JobRunning
	mustNil(t, f.db.UpdateJob(ctx, first.ID, trainyard.JobUpdate{Status: &running}))
	if got := head(); got != first.ID {
		t.Fatalf("a running job must stay the head; got %s", got)
	}
	done := trainyard.JobCompleted
	mustNil(t, f.db.UpdateJob(ctx, first.ID, trainyard.JobUpdate{Status: &done}))
	if got := head(); got != second.ID {
		t.Fatalf("head after the first finished = %s, want %s", got, second.ID)
	}
	cancelled := trainyard.JobCancelled
	mustNil(t, f.db.UpdateJob(ctx, second.ID, trainyard.JobUpdate{Status: &cancelled}))
	if got := head(); got != third.ID {
		t.Fatalf("head = %s, want %s", got, third.ID)
	}
}

func TestUnfinishedJobsListsOpenJobsOldestFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b, c := newJob(t, f.db, f.model), newJob(t, f.db, f.model), newJob(t, f.db, f.model)
	failed := trainyard.JobFailed
	mustNil(t, f.db.UpdateJob(ctx, b.ID, trainyard.JobUpdate{Status: &failed}))

	jobs, err := f.db.UnfinishedJobs(ctx, time.Now().Add(time.Minute), 10)
	mustNil(t, err)
	if len(jobs) != 2 || jobs[0].ID != a.ID || jobs[1].ID != c.ID {
		t.Fatalf("UnfinishedJobs = %v", jobIDs(jobs))
	}
	jobs, err = f.db.UnfinishedJobs(ctx, time.Now().Add(time.Minute), 1)
	mustNil(t, err)
	if len(jobs) != 1 || jobs[0].ID != a.ID {
		t.Fatalf("UnfinishedJobs limit 1 = %v", jobIDs(jobs))
	}
	jobs, err = f.db.UnfinishedJobs(ctx, a.CreatedAt, 10)
	mustNil(t, err)
	if len(jobs) != 0 {
		t.Fatalf("jobs created before the first = %v", jobIDs(jobs))
	}
}

func jobIDs(jobs []*trainyard.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
