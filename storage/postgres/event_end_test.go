package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
)

// TestEndJob checks that a job's terminal event and terminal status are
// written together, that a retry is a no-op and that a job closed one way is
// not given the other way's status.
func TestEndJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	appendSteps(t, f, j.ID, 3)

	completed, step := trainyard.JobCompleted, 7
	done := trainyard.JobUpdate{Status: &completed, Checkpoint: &step}
	end, err := f.db.EndJob(ctx, &trainyard.Event{JobID: j.ID, Seq: 99, Type: trainyard.EventTrainingEnded, Data: map[string]any{"step": 7}}, done)
	mustNil(t, err)
	if end.Seq != 4 || end.Type != trainyard.EventTrainingEnded || end.Data["step"] != float64(7) {
		t.Fatalf("EndJob stored %+v, want training_ended at seq 4 (after the last event, whatever seq was asked)", end)
	}
	got, err := f.db.GetJob(ctx, j.ID)
	mustNil(t, err)
	if got.Status != trainyard.JobCompleted || got.Checkpoint == nil || *got.Checkpoint != 7 {
		t.Fatalf("job after EndJob: status %s checkpoint %v", got.Status, got.Checkpoint)
	}
	again, err := f.db.EndJob(ctx, &trainyard.Event{JobID: j.ID, Type: trainyard.EventTrainingEnded}, done)
	mustNil(t, err)
	if again.ID != end.ID {
		t.Fatalf("retry stored another event %+v", again)
	}
	// A failure after the end changes neither the event nor the status.
	failed, msg := trainyard.JobFailed, "boom"
	other, err := f.db.EndJob(ctx, &trainyard.Event{JobID: j.ID, Type: trainyard.EventTrainingFailed}, trainyard.JobUpdate{Status: &failed, Error: &msg})
	mustNil(t, err)
	if other.ID != end.ID {
		t.Fatalf("a second terminal event was stored: %+v", other)
	}
	if got, _ := f.db.GetJob(ctx, j.ID); got.Status != trainyard.JobCompleted || got.Error != nil {
		t.Fatalf("job closed as COMPLETED became %s (error %v)", got.Status, got.Error)
	}

	_, err = f.db.EndJob(ctx, &trainyard.Event{JobID: j.ID, Type: trainyard.EventGradientStep}, done)
	wantCode(t, err, trainyard.EINVALID)
	_, err = f.db.EndJob(ctx, &trainyard.Event{JobID: fakeID, Type: trainyard.EventTrainingEnded}, done)
	wantCode(t, err, trainyard.ENOTFOUND)
	// A job without any event ends at seq 1.
	first, err := f.db.EndJob(ctx, &trainyard.Event{JobID: newJob(t, f.db, f.model).ID, Type: trainyard.EventTrainingFailed}, trainyard.JobUpdate{Status: &failed})
	mustNil(t, err)
	if first.Seq != 1 {
		t.Fatalf("first event of a job at seq %d", first.Seq)
	}
}

// TestEndJobIsSeenWhole races readers against EndJob: a reader that lists
// the terminal event and then reads the job always finds its terminal
// status, which is what a client polling events and then the job relies on.
func TestEndJobIsSeenWhole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	completed := trainyard.JobCompleted
	for round := range 10 {
		j := newJob(t, f.db, f.model)
		appendSteps(t, f, j.ID, 2)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			// EndJob returns before wg.Wait, so the loop ends.
			for {
				last, err := f.db.LastEvent(ctx, j.ID)
				if err != nil {
					t.Errorf("round %d: %v", round, err)
					return
				}
				if last.Type != trainyard.EventTrainingEnded {
					continue
				}
				got, err := f.db.GetJob(ctx, j.ID)
				if err != nil {
					t.Errorf("round %d: %v", round, err)
				} else if got.Status != trainyard.JobCompleted {
					t.Errorf("round %d: training_ended is stored but the job reads %s", round, got.Status)
				}
				return
			}
		}()
		_, err := f.db.EndJob(ctx, &trainyard.Event{JobID: j.ID, Type: trainyard.EventTrainingEnded}, trainyard.JobUpdate{Status: &completed})
		mustNil(t, err)
		wg.Wait()
	}
}
