package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/workflows"
)

// envLongJobSteps sets the length of TestLongJob (default 1,000 steps);
// TRAINYARD_LONG_JOB_STEPS=10000 runs the 10,000.
const envLongJobSteps = "TRAINYARD_LONG_JOB_STEPS"

// TestLongJob is an hours-long SFT job in miniature: thousands of gradient
// steps of one short conversation each (the built-in model), on a worker
// process that is SIGKILLed a third of the way in and replaced. The job
// completes with one checkpoint; its workflow continued as new many times,
// each run's history staying small, so the history is bounded however long
// the job; its events page through the API, 100 at a time, in order,
// without a gap or a duplicate, and their sequence numbers run 1..steps+2.
//
// A step of tiny-chat costs about 10 ms of CPU however short its sequence
// (the weights are packed for every product), plus its event's
// transaction, so 10,000 steps take minutes on two cores: `make test` runs
// 1,000, and TRAINYARD_LONG_JOB_STEPS=10000 the 10,000.
func TestLongJob(t *testing.T) {
	t.Parallel()
	steps := 1_000
	if v := os.Getenv(envLongJobSteps); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 30 || n%10 != 0 {
			t.Fatalf("%s=%q: want a multiple of 10, at least 30", envLongJobSteps, v)
		}
		steps = n
	}
	s := newStack(t, stackOptions{
		// A Train activity runs about half a second, a run 5 of them; a
		// dead worker's step moves on after 3 s without heartbeats.
		Workflow: workflows.Options{HeartbeatTimeout: 3 * time.Second, TrainActivitiesPerRun: 5},
		Activities: activities.Config{ChunkDuration: 500 * time.Millisecond, SaveInterval: 250 * time.Millisecond,
			HeartbeatInterval: 300 * time.Millisecond},
	})
	model := s.createModel("long")
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=long", sftJSONL(10))
	start := time.Now()
	id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
		"model_id": model, "training_data_url": up["url"],
		"config":              map[string]any{"batch_size": 1, "learning_rate": 1e-4},
		"experimental_config": map[string]any{"num_epochs": steps / 10},
	})["id"].(string)

	first := s.startWorkerProcess()
	ctx := context.Background()
	budget := max(2*time.Minute, time.Duration(steps)*100*time.Millisecond) // 100 ms a step: a loaded machine
	for deadline := time.Now().Add(budget); ; time.Sleep(100 * time.Millisecond) {
		n, err := s.db.CountEvents(ctx, id, trainyard.EventGradientStep)
		if err != nil {
			t.Fatal(err)
		}
		if n >= steps/3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d steps after %v", n, steps, budget)
		}
	}
	first.kill(t)
	killed, _ := s.db.CountEvents(ctx, id, trainyard.EventGradientStep)
	t.Logf("killed the worker after %d steps, %v in", killed, time.Since(start).Round(time.Millisecond))
	s.startWorkerProcess()
	job := s.waitJob(id, budget)
	took := time.Since(start)
	if job["status"] != "COMPLETED" || job["current_step"] != float64(steps) || job["checkpoint_step"] != float64(1) {
		t.Fatalf("job = %v", job)
	}
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1]" {
		t.Fatalf("checkpoints = %s", got)
	}

	// The events page through without a gap: started, the steps, ended.
	pages := 0
	var evs []event
	for after := ""; ; pages++ {
		path := "/v1/preview/training-jobs/" + id + "/events?limit=100"
		if after != "" {
			path += "&after=" + after
		}
		page := s.mustCall("GET", path, nil)
		for _, e := range page["data"].([]any) {
			m := e.(map[string]any)
			evs = append(evs, event{ID: m["id"].(string), Type: m["type"].(string)})
		}
		if page["has_more"] != true {
			break
		}
		after = page["last_id"].(string)
	}
	checkEvents(t, evs, steps, "training_ended")
	next := 1
	for opts := (trainyard.ListOptions{Limit: trainyard.MaxPageLimit}); ; {
		page, err := s.db.ListEvents(ctx, id, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Items {
			if e.Seq != next {
				t.Fatalf("event %d has seq %d", next, e.Seq)
			}
			next++
		}
		if !page.HasMore {
			break
		}
		opts.After = page.Items[len(page.Items)-1].ID
	}

	// The history is bounded: many runs, each small.
	runs, longest := 0, 0
	for runID := ""; ; {
		it := s.tc.GetWorkflowHistory(ctx, workflows.WorkflowID(id), runID, false, 0)
		n, prev := 0, ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				prev = ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
			}
			n++
		}
		runs, longest = runs+1, max(longest, n)
		if prev == "" {
			break
		}
		runID = prev
	}
	t.Logf("%d steps in %v (%.1f ms/step, a worker kill included); %d pages of events; %d workflow runs, the longest %d events",
		steps, took.Round(time.Millisecond), float64(took.Milliseconds())/float64(steps), pages+1, runs, longest)
	if runs < 3 || longest > 400 {
		t.Fatalf("%d runs, the longest history %d events: not bounded", runs, longest)
	}
}
