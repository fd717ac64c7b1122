package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/workflows"
)

// TestPauseAndResumeRoutes: pause and resume go to the job's workflow,
// whose refusal is a 409 with its reason; a finished job is refused without
// asking Temporal; a job without a running workflow is a 409 that says so;
// a PAUSED job reads as paused; another account's job is 404.
func TestPauseAndResumeRoutes(t *testing.T) {
	t.Parallel()
	e, fw := newJobsEnv(t)
	id := e.submit(e.createModel("pause"))
	base := "/v1/preview/training-jobs/" + id
	fw.states[id] = workflows.WorkflowState{Exists: true, Running: true, Status: "Running"}
	fw.progress[id] = &workflows.Progress{Status: trainyard.JobRunning, Phase: workflows.PhasePausing, CurrentStep: 3, TotalSteps: 9}

	res := e.call("POST", base+"/pause", nil)
	mustStatus(t, res, http.StatusOK)
	if got := res.JSON(t); got["id"] != id || got["phase"] != "pausing" {
		t.Fatalf("pause answer = %v", got)
	}
	paused := trainyard.JobPaused
	if err := e.db.UpdateJob(context.Background(), id, trainyard.JobUpdate{Status: &paused}); err != nil {
		t.Fatal(err)
	}
	delete(fw.progress, id) // no worker answers: the stored job
	if got := e.call("GET", base, nil).JSON(t); got["status"] != "PAUSED" || got["phase"] != "paused" {
		t.Fatalf("paused job = %v", got)
	}

	fw.controlErr = trainyard.Errorf(trainyard.ECONFLICT, "Training job '%s' is already PAUSED; resume it with POST .../resume.", id)
	res = e.call("POST", base+"/pause", nil)
	mustStatus(t, res, http.StatusConflict)
	if d := res.JSON(t)["detail"]; d != "Training job '"+id+"' is already PAUSED; resume it with POST .../resume." {
		t.Fatalf("409 detail = %v", d)
	}
	fw.controlErr = nil
	mustStatus(t, e.call("POST", base+"/resume", nil), http.StatusOK)

	// No running workflow (not started yet).
	fw.controlErr = trainyard.Errorf(trainyard.ENOTFOUND, "no such workflow")
	delete(fw.states, id)
	res = e.call("POST", base+"/resume", nil)
	mustStatus(t, res, http.StatusConflict)
	if d := res.JSON(t)["detail"].(string); d != "Training job '"+id+"' has not started yet (its workflow is not running); try again in a moment." {
		t.Fatalf("409 detail = %v", d)
	}
	// A workflow that ended without closing the job: closed, then refused.
	fw.states[id] = workflows.WorkflowState{Exists: true, Status: "Terminated"}
	res = e.call("POST", base+"/pause", nil)
	mustStatus(t, res, http.StatusConflict)
	if d := res.JSON(t)["detail"].(string); d != "Training job '"+id+"' is CANCELLED; only a QUEUED or RUNNING job can be paused." {
		t.Fatalf("409 detail = %v", d)
	}
	// Finished: refused here, Temporal is not asked.
	before := len(fw.controls)
	res = e.call("POST", base+"/resume", nil)
	mustStatus(t, res, http.StatusConflict)
	if d := res.JSON(t)["detail"].(string); d != "Training job '"+id+"' is CANCELLED; only a PAUSED job can be resumed." || len(fw.controls) != before {
		t.Fatalf("409 detail = %v, %d calls", d, len(fw.controls)-before)
	}
	if want := []string{"pause:" + id, "pause:" + id, "resume:" + id, "resume:" + id, "pause:" + id}; len(fw.controls) != len(want) {
		t.Fatalf("controls = %v, want %v", fw.controls, want)
	}
	mustStatus(t, e.call("POST", base+"/pause", nil, as(e.otherKey)), http.StatusNotFound)
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs/x/resume", nil), http.StatusUnprocessableEntity)
}
