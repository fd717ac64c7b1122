package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/worker"
	"github.com/trainyard/trainyard/workflows"
)

// longSFT submits an SFT job of many small steps.
func (s *stack) longSFT(model string, conversations, epochs int) string {
	s.t.Helper()
	up := s.mustCall("POST", fmt.Sprintf("/v1/preview/files?project=e2e&name=long-%d", time.Now().UnixNano()), sftJSONL(conversations))
	return s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
		"model_id": model, "training_data_url": up["url"],
		"config":              map[string]any{"batch_size": 1, "learning_rate": 1e-3},
		"experimental_config": map[string]any{"num_epochs": epochs},
	})["id"].(string)
}

func TestCancelRunningJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{ChunkDuration: 500 * time.Millisecond}})
	s.startWorker()
	model := s.createModel("cancel")
	id := s.longSFT(model, 20, 10) // 200 steps: far longer than the test waits
	s.waitEvents(id, 2, time.Minute)

	// While it runs, the job answers with live progress from its workflow
	// (the step count is stored just after each step's event).
	var live map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if live = s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil); live["current_step"].(float64) >= 1 {
			break
		}
	}
	if live["status"] != "RUNNING" || live["phase"] != "training" || live["total_steps"] != float64(200) ||
		live["current_step"].(float64) < 1 || live["workflow_id"] != workflows.WorkflowID(id) || live["run_id"] == nil ||
		live["started_at"] == nil || live["finished_at"] != nil {
		t.Fatalf("running job = %v", live)
	}

	job := s.mustCall("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil)
	if job["id"] != id {
		t.Fatalf("cancel answered %v", job)
	}
	job = s.waitJob(id, time.Minute)
	if job["status"] != "CANCELLED" || job["error"] != "cancelled" || job["finished_at"] == nil {
		t.Fatalf("job = %v", job)
	}
	evs := s.events(id)
	checkEvents(t, evs, len(evs)-2, "training_failed")
	if evs[len(evs)-1].Data["error_message"] != "cancelled" {
		t.Fatalf("terminal event = %v", evs[len(evs)-1])
	}
	if steps := s.checkpointSteps(model); len(steps) != 0 {
		t.Fatalf("a cancelled job left checkpoints %v", steps)
	}
	if names, err := s.blobs.JobFileNames(context.Background(), id); err != nil || fmt.Sprint(names) != "[data.jsonl input.json]" {
		t.Fatalf("objects left under the cancelled job: %v %v", names, err)
	}
	// The workflow closes just after its last activity has recorded the
	// job's end, which is what the API reports.
	if st := s.waitWorkflowClosed(id, 30*time.Second); st.Status != "Canceled" {
		t.Fatalf("workflow state = %+v", st)
	}
	// Cancelling again is harmless.
	if again := s.mustCall("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil); again["status"] != "CANCELLED" || again["phase"] != "done" {
		t.Fatalf("second cancel = %v", again)
	}
	s.noAlarms()
	recordHistory(t, s, id, "sft_cancelled")
}

// TestTerminatedFromTemporal terminates a job's workflow behind trainyard's
// back (as an operator would in the Temporal UI): reading the job closes
// it, and the next job on the model is not blocked.
func TestTerminatedFromTemporal(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{ChunkDuration: 500 * time.Millisecond, PollInterval: 100 * time.Millisecond}})
	s.startWorker()
	model := s.createModel("terminate")
	id := s.longSFT(model, 20, 10)
	s.waitEvents(id, 2, time.Minute)
	next := s.mustCall("POST", "/v1/preview/training-jobs", sampleRL(t, 2, 3, 7).body(model, 1e-3))["id"].(string)

	if err := s.tc.TerminateWorkflow(context.Background(), workflows.WorkflowID(id), "", "operator"); err != nil {
		t.Fatal(err)
	}
	// The waiting RL job finds the terminated predecessor, closes it and runs.
	if job := s.waitJob(next, 2*time.Minute); job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(1) {
		t.Fatalf("next job = %v", job)
	}
	job := s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil)
	if job["status"] != "CANCELLED" || job["error"] != "cancelled: the job's workflow was terminated" {
		t.Fatalf("terminated job = %v", job)
	}
	evs := s.events(id)
	checkEvents(t, evs, len(evs)-2, "training_failed")
	time.Sleep(time.Second) // the terminated run's activity learns of it at its next heartbeat
	s.noAlarms()
	// Closed without its workflow's cleanup, the job still keeps only its
	// inputs: its plan and intermediate state go too, including what the
	// terminated run's activity stores before it learns of the terminate.
	deadline := time.Now().Add(30 * time.Second)
	for {
		names, err := s.blobs.JobFileNames(context.Background(), id)
		if err == nil && fmt.Sprint(names) == "[data.jsonl input.json]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("objects left under the terminated job: %v %v", names, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestIdempotentSubmit(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("idem")
	body := sampleRL(t, 2, 3, 3).body(model, 1e-3)
	ids := make([]string, 4)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = s.mustCall("POST", "/v1/preview/training-jobs", body, "Idempotency-Key", "step-1")["id"].(string)
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("ids = %v", ids)
		}
	}
	s.waitJob(ids[0], 2*time.Minute)
	// Retried after completion: still the same job, and nothing runs again.
	if again := s.mustCall("POST", "/v1/preview/training-jobs", body, "Idempotency-Key", "step-1")["id"]; again != ids[0] {
		t.Fatalf("retry after completion = %v", again)
	}
	jobs := s.mustCall("GET", "/v1/preview/training-jobs?model_id="+model, nil)["data"].([]any)
	if len(jobs) != 1 || fmt.Sprint(s.checkpointSteps(model)) != "[1]" {
		t.Fatalf("%d jobs, checkpoints %v", len(jobs), s.checkpointSteps(model))
	}
	checkEvents(t, s.events(ids[0]), 1, "training_ended")
}

// TestConcurrentJobsOnOneModelAreSerialised submits three RL jobs at once:
// they run in creation order and write checkpoints 1, 2, 3.
func TestConcurrentJobsOnOneModelAreSerialised(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{PollInterval: 100 * time.Millisecond}})
	s.startWorker()
	s.startWorker() // two workers: nothing but the gate keeps the jobs apart
	model := s.createModel("serial")
	var ids []string
	for i := range 3 {
		ids = append(ids, s.mustCall("POST", "/v1/preview/training-jobs", sampleRL(t, 2, 3, int64(10*i)).body(model, 1e-3))["id"].(string))
	}
	for i, id := range ids {
		if job := s.waitJob(id, 3*time.Minute); job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(i+1) {
			t.Fatalf("job %d = %v", i, job)
		}
	}
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1 2 3]" {
		t.Fatalf("checkpoints = %s", got)
	}
	for i, id := range ids {
		c, err := s.db.FindCheckpoint(context.Background(), model, i+1)
		if err != nil || c.JobID == nil || *c.JobID != id {
			t.Fatalf("checkpoint %d = %+v (%v), want job %s", i+1, c, err, id)
		}
	}
}

// TestJobAcceptedWhileTemporalWasDown creates a job the way the API does
// when Temporal does not answer (row and input, no workflow); the worker's
// reconciler starts it.
func TestJobAcceptedWhileTemporalWasDown(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("orphan")
	down := workflows.NewClient(unreachableTemporal(t), workflows.ClientOptions{TaskQueue: s.queue})
	srvDown := s.withWorkflows(down)
	status, out := srvDown.call("POST", "/v1/preview/training-jobs", sampleRL(t, 2, 3, 5).body(model, 1e-3))
	if status != 200 {
		t.Fatalf("POST while Temporal is down: %d %v", status, out)
	}
	id := out["id"].(string)
	if job := s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil); job["status"] != "QUEUED" {
		t.Fatalf("job = %v", job)
	}
	r := &worker.Reconciler{Jobs: s.db, Workflows: s.wf, Grace: time.Nanosecond}
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if job := s.waitJob(id, 2*time.Minute); job["status"] != "COMPLETED" {
		t.Fatalf("job = %v", job)
	}
}

func TestBadTrainingDataFailsTheJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("bad")
	// A line no model could train on is refused at upload; one too long
	// for this model's context is found when the job prepares.
	if status, _ := s.call("POST", "/v1/preview/files?project=e2e&name=noanswer", `{"messages":[{"role":"user","content":"no answer"}]}`+"\n"); status != 422 {
		t.Fatalf("upload without an assistant turn: status %d", status)
	}
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=bad", tooLongJSONL())
	id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{"model_id": model, "training_data_url": up["url"]})["id"].(string)
	job := s.waitJob(id, time.Minute)
	if job["status"] != "FAILED" || !strings.HasPrefix(job["error"].(string), "training data line 1: the conversation is") {
		t.Fatalf("job = %v", job)
	}
	evs := s.events(id)
	if len(evs) != 1 || evs[0].Type != "training_failed" || evs[0].Data["error_message"] != job["error"] {
		t.Fatalf("events = %v", evs)
	}
	recordHistory(t, s, id, "sft_failed")
}

// unreachableTemporal is a client whose server is gone: dialed lazily to a
// port nothing listens on.
func unreachableTemporal(t *testing.T) client.Client {
	t.Helper()
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1", Logger: worker.NewLogger(zap.NewNop())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// tooLongJSONL is one conversation longer than tiny-chat's context.
func tooLongJSONL() string {
	return `{"messages":[{"role":"user","content":"` + strings.Repeat("words ", 300) + `"},{"role":"assistant","content":"ok"}]}` + "\n"
}
