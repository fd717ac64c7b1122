package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/workflows"
)

// waitStatus polls the job until it has status and returns it.
func (s *stack) waitStatus(jobID, status string, timeout time.Duration) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		job := s.mustCall("GET", "/v1/preview/training-jobs/"+jobID, nil)
		if job["status"] == status {
			return job
		}
		if time.Now().After(deadline) || trainyard.JobStatus(job["status"].(string)).Terminal() {
			s.t.Fatalf("job %s is not %s after %s: %v", jobID, status, timeout, job)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantConflict sends a request that must be refused with 409 and a detail
// containing want.
func (s *stack) wantConflict(method, path, want string) {
	s.t.Helper()
	status, out := s.call(method, path, nil)
	if status != http.StatusConflict || !strings.Contains(fmt.Sprint(out["detail"]), want) {
		s.t.Fatalf("%s %s = %d %v, want 409 saying %q", method, path, status, out, want)
	}
}

// TestPauseAndResume: a running job paused through the API stops at a step
// boundary and shows PAUSED (GET, a training_paused event, the Temporal
// search attribute) while no activity of it runs; its model's next job
// waits behind it; invalid transitions are 409s that say why. Resumed, it
// continues at exactly the next step with the same optimizer state: its
// losses and its final adapter and optimizer state equal, bit for bit,
// those of the same job run without a pause on a model forked from the
// same checkpoint. A paused job can be cancelled.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	src := s.createModel("pause-source")
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=pause-data", sftJSONL(20))
	if job := s.waitJob(s.sftJob(src, up["url"], 1), 2*time.Minute); job["status"] != "COMPLETED" {
		t.Fatalf("warm-up job = %v", job)
	}
	fork := func(name string) string {
		return s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": name, "base_model": baseModel,
			"from_checkpoint": "wandb-artifact:///e2e/e2e/pause-source:step1"})["id"].(string)
	}
	straight, paused := fork("straight"), fork("paused")
	const epochs, steps = 10, 200
	reference := s.sftJob(straight, up["url"], epochs)

	id := s.sftJob(paused, up["url"], epochs)
	base := "/v1/preview/training-jobs/" + id
	s.waitEvents(id, 6, 2*time.Minute)
	s.wantConflict("POST", base+"/resume", "not PAUSED; only a PAUSED job can be resumed")
	asked := time.Now()
	if job := s.mustCall("POST", base+"/pause", nil); job["status"] != "PAUSED" && job["phase"] != "pausing" {
		t.Fatalf("pause answered %v", job)
	}
	job := s.waitStatus(id, "PAUSED", time.Minute)
	t.Logf("PAUSED %v after the pause request, at step %v of %v", time.Since(asked).Round(time.Millisecond), job["current_step"], job["total_steps"])
	at := job["current_step"].(float64)
	if job["phase"] != "paused" || at < 5 || at >= steps {
		t.Fatalf("paused job = %v", job)
	}
	evs := s.events(id)
	if last := evs[len(evs)-1]; last.Type != "training_paused" || last.Data["step"] != at || len(losses(evs)) != int(at) {
		t.Fatalf("events end with %v after %d steps", last, len(losses(evs)))
	}
	s.wantConflict("POST", base+"/pause", "already PAUSED")
	// Paused holds nothing: no activity runs, and the model's next job waits.
	d, err := s.tc.DescribeWorkflowExecution(context.Background(), workflows.WorkflowID(id), "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.GetPendingActivities()); n != 0 {
		t.Fatalf("%d activities pending while paused: %v", n, d.GetPendingActivities())
	}
	next := s.sftJob(paused, up["url"], 1)
	s.waitSearch(`WorkflowId="` + workflows.WorkflowID(id) + `" AND TrainyardJobStatus="PAUSED" AND ExecutionStatus="Running"`)
	// The next job first fetches its data (on a queue of its own, so a
	// loaded machine may take a while), then waits for the model's turn,
	// which the paused job keeps.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		job := s.mustCall("GET", "/v1/preview/training-jobs/"+next, nil)
		if job["status"] != "QUEUED" || (job["phase"] != "fetching" && job["phase"] != "waiting") || time.Now().After(deadline) {
			t.Fatalf("the model's next job while the first is paused = %v", job)
		}
		if job["phase"] == "waiting" {
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	if job := s.mustCall("GET", "/v1/preview/training-jobs/"+next, nil); job["status"] != "QUEUED" || job["phase"] != "waiting" {
		t.Fatalf("the model's next job while the first is paused = %v", job)
	}
	if steps := losses(s.events(id)); len(steps) != int(at) {
		t.Fatalf("%d steps while paused at %v", len(steps), at)
	}

	resumed := s.mustCall("POST", base+"/resume", nil)
	if resumed["status"] != "RUNNING" {
		t.Fatalf("resume answered %v", resumed)
	}
	s.wantConflict("POST", base+"/resume", "only a PAUSED job can be resumed")
	for _, j := range []string{reference, id, next} {
		if job := s.waitJob(j, 3*time.Minute); job["status"] != "COMPLETED" {
			t.Fatalf("job = %v", job)
		}
	}
	evs = s.events(id)
	var types []string
	for _, e := range evs {
		if e.Type != "gradient_step" {
			types = append(types, e.Type)
		}
	}
	if fmt.Sprint(types) != "[training_started training_paused training_resumed training_ended]" || len(evs) != steps+4 {
		t.Fatalf("%d events, besides the steps: %v", len(evs), types)
	}
	if evs[int(at)+2].Type != "training_resumed" || evs[int(at)+2].Data["step"] != at {
		t.Fatalf("training_resumed at %d: %v", int(at)+2, evs[int(at)+2])
	}
	stored, err := s.db.ListEvents(context.Background(), id, trainyard.ListOptions{Limit: trainyard.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range stored.Items {
		if e.Seq != i+1 {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if a, b := losses(s.events(reference)), losses(evs); !reflect.DeepEqual(a, b) || len(a) != steps {
		t.Fatalf("losses with a pause differ from the uninterrupted run's (%d vs %d steps)", len(b), len(a))
	}
	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.OptimizerStateFile} {
		if !bytes.Equal(s.checkpointFile(straight, 1, name), s.checkpointFile(paused, 1, name)) {
			t.Fatalf("%s after a pause differs from the uninterrupted run's", name)
		}
	}
	if got := fmt.Sprint(s.checkpointSteps(paused)); got != "[0 1 2]" {
		t.Fatalf("checkpoints of the paused model = %s", got)
	}
	s.waitWorkflowClosed(id, time.Minute)
	recordHistory(t, s, id, "sft_paused_resumed")

	// A paused job can be cancelled.
	long := s.sftJob(paused, up["url"], epochs)
	s.waitEvents(long, 3, 2*time.Minute)
	s.mustCall("POST", "/v1/preview/training-jobs/"+long+"/pause", nil)
	s.waitStatus(long, "PAUSED", time.Minute)
	s.mustCall("POST", "/v1/preview/training-jobs/"+long+"/cancel", nil)
	if job := s.waitJob(long, time.Minute); job["status"] != "CANCELLED" || job["error"] != "cancelled" {
		t.Fatalf("cancelled paused job = %v", job)
	}
	evs = s.events(long)
	if n := len(evs); evs[n-2].Type != "training_paused" || evs[n-1].Type != "training_failed" {
		t.Fatalf("events of the cancelled paused job end with %v", evs[n-2:])
	}
	s.wantConflict("POST", "/v1/preview/training-jobs/"+long+"/resume", "is CANCELLED; only a PAUSED job can be resumed")
	s.waitWorkflowClosed(long, time.Minute)
	recordHistory(t, s, long, "sft_paused_cancelled")
	s.noAlarms()
}

// waitSearch waits until the Temporal visibility query finds a workflow.
func (s *stack) waitSearch(query string) {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := s.tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query})
		if err != nil {
			s.t.Fatal(err)
		}
		if len(resp.GetExecutions()) > 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no workflow found by %s", query)
		}
	}
}
