package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// prepareSFT creates and prepares an SFT job of steps steps (batches of one
// conversation) on model.
func (f *fixture) prepareSFT(t *testing.T, model *trainyard.Model, name string, conversations, epochs int) (*trainyard.Job, int) {
	t.Helper()
	cfg := jobspec.JobConfig{TrainingDataURL: f.putArtifact(t, name, sftData(conversations)),
		Config:             json.RawMessage(`{"batch_size": 1, "learning_rate": 1e-3}`),
		ExperimentalConfig: json.RawMessage(fmt.Sprintf(`{"num_epochs": %d}`, epochs))}
	job := f.newJob(t, model, trainyard.JobKindSFT, cfg, nil)
	var prep PrepareResult
	must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, &prep))
	return job, prep.TotalSteps
}

// TestTrainPausesAtAStepBoundaryAndResumesExactly: a Train activity that
// finds the job's pause request stops after the step in progress with its
// state stored at that step; Pause and Resume record the status and their
// events (once, however often retried); the Train after the resume goes on
// from exactly the next step, and the job ends with the same adapter and
// optimizer state, byte for byte, as the same job trained without a pause.
func TestTrainPausesAtAStepBoundaryAndResumesExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{PauseCheckInterval: time.Nanosecond, SaveInterval: time.Hour}, nil)
	ctx := context.Background()
	whole, paused := f.model, f.newModel(t)
	f.seedCheckpoint(t, whole, paused)
	jobA, total := f.prepareSFT(t, whole, "a", 6, 3)
	jobB, _ := f.prepareSFT(t, paused, "b", 6, 3)
	var r TrainResult
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: jobA.ID, BaseStep: 1, TotalSteps: total}, &r))
	if r.Done != total || r.Paused {
		t.Fatalf("uninterrupted Train = %+v", r)
	}

	// Asked to pause once two steps are recorded.
	go func() {
		for {
			if n, err := f.db.CountEvents(ctx, jobB.ID, trainyard.EventGradientStep); err != nil || n >= 2 {
				yes := true
				_ = f.db.UpdateJob(ctx, jobB.ID, trainyard.JobUpdate{PauseRequested: &yes})
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: jobB.ID, BaseStep: 1, TotalSteps: total}, &r))
	k := r.Done
	if !r.Paused || k < 2 || k >= total {
		t.Fatalf("Train with a pause request = %+v of %d steps", r, total)
	}
	job, err := f.db.GetJob(ctx, jobB.ID)
	must(t, err)
	if job.SavedStep != k {
		t.Fatalf("state stored at step %d, paused at %d", job.SavedStep, k)
	}
	for range 2 { // a retried Pause writes its event once
		must(t, f.run(t, f.acts.Pause, PauseInput{JobID: jobB.ID, Step: k, TotalSteps: total, Seq: k + 2}, nil))
	}
	if job, _ = f.db.GetJob(ctx, jobB.ID); job.Status != trainyard.JobPaused || job.PauseRequested || job.CurrentStep != k {
		t.Fatalf("paused job = %+v", job)
	}
	must(t, f.run(t, f.acts.Resume, ResumeInput{JobID: jobB.ID, Step: k, TotalSteps: total, Seq: k + 3}, nil))
	if job, _ = f.db.GetJob(ctx, jobB.ID); job.Status != trainyard.JobRunning {
		t.Fatalf("resumed job = %+v", job)
	}
	r = TrainResult{}
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: jobB.ID, BaseStep: 1, Done: k, TotalSteps: total, EventOffset: 2}, &r))
	if r.Done != total || r.Paused {
		t.Fatalf("Train after the resume = %+v", r)
	}
	must(t, f.run(t, f.acts.Complete, CompleteInput{JobID: jobB.ID, CheckpointStep: 2, TotalSteps: total, Metrics: r.Metrics, EventOffset: 2}, nil))

	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.OptimizerStateFile} {
		if !bytes.Equal(f.checkpointFile(t, whole, 2, name), f.checkpointFile(t, paused, 2, name)) {
			t.Fatalf("%s differs between the uninterrupted and the paused job", name)
		}
	}
	page, err := f.db.ListEvents(ctx, jobB.ID, trainyard.ListOptions{Limit: trainyard.MaxPageLimit})
	must(t, err)
	want := []string{"training_started@1"}
	for s := 1; s <= total; s++ {
		if s == k+1 {
			want = append(want, fmt.Sprintf("training_paused@%d", k+2), fmt.Sprintf("training_resumed@%d", k+3))
		}
		seq := s + 1
		if s > k {
			seq += 2
		}
		want = append(want, fmt.Sprintf("gradient_step@%d", seq))
	}
	want = append(want, fmt.Sprintf("training_ended@%d", total+4))
	if got := eventTypes(page.Items); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events = %v\nwant     %v", got, want)
	}
	if page.Items[k+1].Data["step"] != float64(k) {
		t.Fatalf("training_paused data = %v", page.Items[k+1].Data)
	}
}

// TestPauseBeforeAnyStep: a Train activity that finds the request before its
// first step returns at once, with no progress and the job's last metrics.
func TestPauseBeforeAnyStep(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	ctx := context.Background()
	job, total := f.prepareSFT(t, f.model, "early", 2, 1)
	must(t, f.run(t, f.acts.RequestPause, RequestPauseInput{JobID: job.ID}, nil))
	var r TrainResult
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: job.ID, TotalSteps: total}, &r))
	if r.Done != 0 || !r.Paused {
		t.Fatalf("Train = %+v", r)
	}
	if n, _ := f.db.CountEvents(ctx, job.ID, trainyard.EventGradientStep); n != 0 {
		t.Fatalf("%d steps recorded", n)
	}
	// A closed job cannot be asked to pause or be paused.
	must(t, Finalize(ctx, f.db, job.ID, trainyard.JobCancelled, "cancelled"))
	if err := f.run(t, f.acts.RequestPause, RequestPauseInput{JobID: job.ID}, nil); err == nil {
		t.Fatal("RequestPause of a cancelled job succeeded")
	}
	if err := f.run(t, f.acts.Pause, PauseInput{JobID: job.ID, Seq: 3}, nil); err == nil {
		t.Fatal("Pause of a cancelled job succeeded")
	}
}

// TestFinalizeCountsStepsAcrossPauses: a job cancelled after a pause
// reports the gradient steps it recorded, not its event count.
func TestFinalizeCountsStepsAcrossPauses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	ctx := context.Background()
	job := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{}, nil)
	for seq, typ := range []trainyard.EventType{trainyard.EventTrainingStarted, trainyard.EventGradientStep,
		trainyard.EventTrainingPaused, trainyard.EventTrainingResumed, trainyard.EventGradientStep, trainyard.EventTrainingPaused} {
		_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: job.ID, Seq: seq + 1, Type: typ})
		must(t, err)
	}
	must(t, Finalize(ctx, f.db, job.ID, trainyard.JobCancelled, "cancelled"))
	got, err := f.db.GetJob(ctx, job.ID)
	must(t, err)
	if got.Status != trainyard.JobCancelled || got.CurrentStep != 2 {
		t.Fatalf("closed job = %+v, want CANCELLED at step 2", got)
	}
	if evs := eventTypes(f.events(t, job.ID)); evs[len(evs)-1] != "training_failed@7" {
		t.Fatalf("events = %v", evs)
	}
}
