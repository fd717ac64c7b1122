package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/internal/testutil/enginetest"
	"github.com/trainyard/trainyard/workflows"
)

// checkEvents checks the documented sequence: training_started at seq 1,
// then steps gradient_step events, then exactly one terminal event of type
// last; ids strictly ordered as listed (the list is by seq).
func checkEvents(t *testing.T, evs []event, steps int, last string) {
	t.Helper()
	if len(evs) != steps+2 {
		t.Fatalf("%d events, want %d: %v", len(evs), steps+2, types(evs))
	}
	seen := map[string]bool{}
	for i, e := range evs {
		want := "gradient_step"
		switch i {
		case 0:
			want = "training_started"
		case len(evs) - 1:
			want = last
		}
		if e.Type != want || seen[e.ID] {
			t.Fatalf("event %d is %s (duplicate id: %v), want %s: %v", i, e.Type, seen[e.ID], want, types(evs))
		}
		seen[e.ID] = true
		if e.Type == "gradient_step" {
			for k, v := range e.Data {
				if _, ok := v.(float64); !ok {
					t.Fatalf("gradient_step data %q = %v is not a number", k, v)
				}
			}
		}
	}
}

// checkGaplessSeqs checks that the job's stored events are numbered 1, 2, …
// with no gap and no duplicate.
func (s *stack) checkGaplessSeqs(jobID string) {
	s.t.Helper()
	stored, err := s.db.ListEvents(context.Background(), jobID, trainyard.ListOptions{Limit: 100})
	if err != nil {
		s.t.Fatal(err)
	}
	for i, e := range stored.Items {
		if e.Seq != i+1 {
			s.t.Fatalf("event %d has seq %d: the sequence has a gap or a duplicate", i, e.Seq)
		}
	}
}

func types(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func TestRLJobsEndToEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("rl")
	data := sampleRL(t, 3, 4, 1)

	first := s.mustCall("POST", "/v1/preview/training-jobs", data.body(model, 5e-3))["id"].(string)
	job := s.waitJob(first, 2*time.Minute)
	if job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(1) || job["type"] != "rl" ||
		job["current_step"] != float64(1) || job["total_steps"] != float64(1) || job["run_id"] == nil {
		t.Fatalf("job = %v", job)
	}
	evs := s.events(first)
	checkEvents(t, evs, 1, "training_ended")
	if evs[0].Data["num_sequences"] != float64(1) {
		t.Fatalf("training_started = %v", evs[0].Data)
	}
	if _, ok := evs[1].Data["reward"]; !ok {
		t.Fatalf("gradient_step lacks reward: %v", evs[1].Data)
	}
	if steps := s.checkpointSteps(model); fmt.Sprint(steps) != "[1]" {
		t.Fatalf("checkpoints = %v", steps)
	}
	// The step made the best completions more likely.
	before, after := enginetest.NLL(t, base(t), nil, data.best), enginetest.NLL(t, base(t), s.adapterAt(model, 1), data.best)
	if !(after < before) {
		t.Fatalf("NLL of the best completions: base %.4f, step 1 %.4f", before, after)
	}

	// The next job continues from checkpoint 1.
	second := s.mustCall("POST", "/v1/preview/training-jobs", sampleRL(t, 3, 4, 100).body(model, 5e-3))["id"].(string)
	if job := s.waitJob(second, 2*time.Minute); job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(2) {
		t.Fatalf("second job = %v", job)
	}
	if steps := s.checkpointSteps(model); fmt.Sprint(steps) != "[1 2]" {
		t.Fatalf("checkpoints = %v", steps)
	}
	if bytes.Equal(s.checkpointFile(model, 1, trainyard.AdapterWeightsFile), s.checkpointFile(model, 2, trainyard.AdapterWeightsFile)) {
		t.Fatal("checkpoint 2 has the weights of checkpoint 1")
	}
	recordHistory(t, s, first, "rl_completed")
}

func TestSFTJobEndToEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("sft")
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=sums", sftJSONL(8))
	id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
		"model_id": model, "training_data_url": up["url"],
		"config":              map[string]any{"batch_size": 4, "learning_rate": 2e-3},
		"experimental_config": map[string]any{"num_epochs": 3},
	})["id"].(string)
	job := s.waitJob(id, 3*time.Minute)
	if job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(1) || job["total_steps"] != float64(6) {
		t.Fatalf("job = %v", job)
	}
	evs := s.events(id)
	checkEvents(t, evs, 6, "training_ended")
	if first, last := evs[1].Data["loss"].(float64), evs[6].Data["loss"].(float64); !(last < first) {
		t.Fatalf("loss %v -> %v", first, last)
	}
	seqs := sftSequences(t, 8)
	if before, after := enginetest.NLL(t, base(t), nil, seqs), enginetest.NLL(t, base(t), s.adapterAt(model, 1), seqs); !(after < before) {
		t.Fatalf("NLL of the training data: base %.4f, trained %.4f", before, after)
	}
	// Only the job's inputs stay: its plan and intermediate state are gone.
	names, err := s.blobs.JobFileNames(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != "[data.jsonl input.json]" {
		t.Fatalf("objects left under the completed job: %v", names)
	}
	recordHistory(t, s, id, "sft_completed")
}

// TestLongSFTJobContinuesAsNew runs an SFT job whose workflow continues as
// new every two Train activities (one step each), so it spans three runs.
func TestLongSFTJobContinuesAsNew(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{
		Workflow:   workflows.Options{TrainActivitiesPerRun: 2},
		Activities: activities.Config{ChunkDuration: time.Nanosecond},
	})
	s.startWorker()
	model := s.createModel("can")
	id := s.longSFT(model, 6, 1)
	job := s.waitJob(id, 2*time.Minute)
	if job["status"] != "COMPLETED" || job["current_step"] != float64(6) || job["checkpoint_step"] != float64(1) {
		t.Fatalf("job = %v", job)
	}
	checkEvents(t, s.events(id), 6, "training_ended")
	// The latest run is the third: the first continued twice.
	runs := 0
	runID := ""
	for {
		it := s.tc.GetWorkflowHistory(context.Background(), workflows.WorkflowID(id), runID, false, 0)
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		runs++
		runID = ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			break
		}
	}
	if runs != 3 {
		t.Fatalf("%d runs, want 3", runs)
	}
	recordHistory(t, s, id, "sft_continue_as_new")
}
