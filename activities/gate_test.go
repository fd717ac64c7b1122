package activities

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// fakeWorkflows stands in for Temporal's view of other jobs' workflows.
type fakeWorkflows struct {
	mu      sync.Mutex
	states  map[string]WorkflowState
	started []string
}

// DescribeJob answers from states; any other job's workflow is running.
func (w *fakeWorkflows) DescribeJob(_ context.Context, jobID string) (WorkflowState, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.states[jobID]; ok {
		return st, nil
	}
	return WorkflowState{Exists: true, Running: true, Status: "Running"}, nil
}

// StartJob records the start and marks the job's workflow running.
func (w *fakeWorkflows) StartJob(_ context.Context, job *trainyard.Job) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = append(w.started, job.ID)
	w.states[job.ID] = WorkflowState{Exists: true, Running: true, Status: "Running"}
	return nil
}

// CancelRun records nothing: the tests of the gate never close their own run.
func (w *fakeWorkflows) CancelRun(context.Context, string, string) error { return nil }

// waitTurnAsync runs WaitTurn in the background.
func (f *fixture) waitTurnAsync(t *testing.T, jobID string) <-chan WaitTurnResult {
	ch := make(chan WaitTurnResult, 1)
	go func() {
		var r WaitTurnResult
		if err := f.run(t, f.acts.WaitTurn, WaitTurnInput{JobID: jobID}, &r); err != nil {
			t.Errorf("WaitTurn: %v", err)
		}
		ch <- r
	}()
	return ch
}

func notYet(t *testing.T, ch <-chan WaitTurnResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("WaitTurn returned %+v while an older job is unfinished", r)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestWaitTurnServesJobsInCreationOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{PollInterval: 20 * time.Millisecond}, &fakeWorkflows{states: map[string]WorkflowState{}})
	f.seedCheckpoint(t, f.model)
	first := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, nil)
	second := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, nil)
	other := f.newJob(t, f.newModel(t), trainyard.JobKindRL, jobspec.JobConfig{}, nil)

	// A job on another model does not wait.
	var r WaitTurnResult
	must(t, f.run(t, f.acts.WaitTurn, WaitTurnInput{JobID: other.ID}, &r))

	ch := f.waitTurnAsync(t, second.ID)
	notYet(t, ch)
	running := trainyard.JobRunning
	must(t, f.db.UpdateJob(context.Background(), first.ID, trainyard.JobUpdate{Status: &running}))
	notYet(t, ch)
	// The first job records checkpoint 2 and completes.
	must(t, f.db.CreateCheckpoint(context.Background(), &trainyard.Checkpoint{ModelID: f.model.ID, Step: 2, JobID: &first.ID}))
	done := trainyard.JobCompleted
	must(t, f.db.UpdateJob(context.Background(), first.ID, trainyard.JobUpdate{Status: &done}))
	select {
	case r := <-ch:
		if r.Finished || r.BaseStep != 2 {
			t.Fatalf("WaitTurn = %+v, want base step 2", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitTurn did not return after the older job completed")
	}

	// A job closed before its workflow ran has nothing to do.
	cancelled := trainyard.JobCancelled
	must(t, f.db.UpdateJob(context.Background(), second.ID, trainyard.JobUpdate{Status: &cancelled}))
	must(t, f.run(t, f.acts.WaitTurn, WaitTurnInput{JobID: second.ID}, &r))
	if !r.Finished {
		t.Fatalf("WaitTurn of a cancelled job = %+v", r)
	}
}

func TestWaitTurnFinalisesAJobWhoseWorkflowWasTerminated(t *testing.T) {
	t.Parallel()
	wf := &fakeWorkflows{states: map[string]WorkflowState{}}
	f := newFixture(t, Config{PollInterval: 20 * time.Millisecond}, wf)
	stuck := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, nil)
	ctx := context.Background()
	running := trainyard.JobRunning
	must(t, f.db.UpdateJob(ctx, stuck.ID, trainyard.JobUpdate{Status: &running}))
	_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: stuck.ID, Seq: 1, Type: trainyard.EventTrainingStarted})
	must(t, err)
	wf.states[stuck.ID] = WorkflowState{Exists: true, Status: "Terminated"}
	next := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, nil)

	var r WaitTurnResult
	must(t, f.run(t, f.acts.WaitTurn, WaitTurnInput{JobID: next.ID}, &r))
	j, err := f.db.GetJob(ctx, stuck.ID)
	must(t, err)
	if j.Status != trainyard.JobCancelled || j.FinishedAt == nil || j.Error == nil {
		t.Fatalf("terminated job = %+v", j)
	}
	evs := f.events(t, stuck.ID)
	if len(evs) != 2 || evs[1].Type != trainyard.EventTrainingFailed || evs[1].Seq != 2 ||
		evs[1].Data["error_message"] != "cancelled: the job's workflow was terminated" {
		t.Fatalf("events = %v, last data %v", eventTypes(evs), evs[len(evs)-1].Data)
	}
}

func TestWaitTurnStartsAnOlderJobThatHasNoWorkflow(t *testing.T) {
	t.Parallel()
	wf := &fakeWorkflows{states: map[string]WorkflowState{}}
	f := newFixture(t, Config{PollInterval: 20 * time.Millisecond, StartGrace: time.Nanosecond}, wf)
	orphan := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{}, nil)
	wf.states[orphan.ID] = WorkflowState{}
	next := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, nil)

	ch := f.waitTurnAsync(t, next.ID)
	deadline := time.Now().Add(5 * time.Second)
	for {
		wf.mu.Lock()
		started := append([]string(nil), wf.started...)
		wf.mu.Unlock()
		if len(started) > 0 {
			if started[0] != orphan.ID {
				t.Fatalf("started %v", started)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphaned job's workflow was never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// It now runs and blocks the next job until it finishes.
	notYet(t, ch)
	failed := trainyard.JobFailed
	must(t, f.db.UpdateJob(context.Background(), orphan.ID, trainyard.JobUpdate{Status: &failed}))
	<-ch
}

func TestFinaliseIsIdempotent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	ctx := context.Background()
	job := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, nil)
	for _, seq := range []int{1, 2} {
		typ := trainyard.EventGradientStep
		if seq == 1 {
			typ = trainyard.EventTrainingStarted
		}
		_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: job.ID, Seq: seq, Type: typ})
		must(t, err)
	}
	for range 3 {
		must(t, Finalize(ctx, f.db, job.ID, trainyard.JobCancelled, "cancelled"))
	}
	// A later, different outcome does not replace the first.
	must(t, Finalize(ctx, f.db, job.ID, trainyard.JobFailed, "boom"))
	evs := f.events(t, job.ID)
	if len(evs) != 3 || evs[2].Type != trainyard.EventTrainingFailed || evs[2].Data["error_message"] != "cancelled" {
		t.Fatalf("events = %v", eventTypes(evs))
	}
	j, err := f.db.GetJob(ctx, job.ID)
	must(t, err)
	// current_step counts the recorded gradient_step, whatever the
	// (throttled) progress row said.
	if j.Status != trainyard.JobCancelled || *j.Error != "cancelled" || j.CurrentStep != 1 {
		t.Fatalf("job = %+v", j)
	}
	// A deleted job is not an error.
	must(t, Finalize(ctx, f.db, "0190f5f0-0000-7000-8000-00000000dead", trainyard.JobFailed, "x"))
	if err := Finalize(ctx, f.db, job.ID, trainyard.JobCompleted, ""); err == nil {
		t.Fatal("Finalize accepted COMPLETED")
	}
}
