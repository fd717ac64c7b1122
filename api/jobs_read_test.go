package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/workflows"
)

// submit creates an RL job through the API and returns its id.
func (e *env) submit(modelID string) string {
	e.t.Helper()
	res := e.call("POST", "/v1/preview/training-jobs", rlBody(modelID, ""))
	mustStatus(e.t, res, http.StatusOK)
	return res.JSON(e.t)["id"].(string)
}

func TestGetTrainingJob(t *testing.T) {
	t.Parallel()
	e, fw := newJobsEnv(t)
	model := e.createModel("get")
	id := e.submit(model)

	// No workflow answers: the stored job.
	res := e.call("GET", "/v1/preview/training-jobs/"+id, nil)
	mustStatus(t, res, http.StatusOK)
	got := res.JSON(t)
	if got["id"] != id || got["model_id"] != model || got["type"] != "rl" || got["status"] != "QUEUED" ||
		got["workflow_id"] != "training-job-"+id || got["run_id"] != nil || got["error"] != nil || got["checkpoint_step"] != nil {
		t.Fatalf("job = %s", res.Body)
	}

	// A running workflow's progress is ahead of the last stored step.
	fw.states[id] = workflows.WorkflowState{Exists: true, Running: true, Status: "Running", RunID: "run-1"}
	fw.progress[id] = &workflows.Progress{Status: trainyard.JobRunning, Phase: workflows.PhaseTraining, CurrentStep: 1, TotalSteps: 1,
		Metrics: map[string]float64{"loss": 0.5}}
	got = e.call("GET", "/v1/preview/training-jobs/"+id, nil).JSON(t)
	if got["status"] != "RUNNING" || got["phase"] != "training" || got["current_step"] != float64(1) || got["total_steps"] != float64(1) ||
		got["run_id"] != "run-1" || got["metrics"].(map[string]any)["loss"] != 0.5 {
		t.Fatalf("live job = %v", got)
	}

	// A workflow terminated from the Temporal UI closes the job on read.
	fw.states[id] = workflows.WorkflowState{Exists: true, Status: "Terminated", RunID: "run-1"}
	got = e.call("GET", "/v1/preview/training-jobs/"+id, nil).JSON(t)
	if got["status"] != "CANCELLED" || got["finished_at"] == nil || got["error"] != "cancelled: the job's workflow was terminated" {
		t.Fatalf("terminated job = %v", got)
	}
	evs := e.call("GET", "/v1/preview/training-jobs/"+id+"/events", nil).JSON(t)["data"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["type"] != "training_failed" {
		t.Fatalf("events = %v", evs)
	}

	// Another account's job and unknown ids are 404; a bad id is 422.
	mustStatus(t, e.call("GET", "/v1/preview/training-jobs/"+id, nil, as(e.otherKey)), http.StatusNotFound)
	mustStatus(t, e.call("GET", "/v1/preview/training-jobs/0190f5f0-0000-7000-8000-000000000000", nil), http.StatusNotFound)
	mustStatus(t, e.call("GET", "/v1/preview/training-jobs/x", nil), http.StatusUnprocessableEntity)
}

func TestListTrainingJobEvents(t *testing.T) {
	t.Parallel()
	e, _ := newJobsEnv(t)
	id := e.submit(e.createModel("events"))
	ctx := context.Background()
	// A paused and resumed job: trainyard's own event types are listed
	// like the document's (and checked against the document as extended
	// by testdata/trainyard-additions.json).
	types := []trainyard.EventType{trainyard.EventTrainingStarted, trainyard.EventGradientStep, trainyard.EventTrainingPaused,
		trainyard.EventTrainingResumed, trainyard.EventGradientStep, trainyard.EventTrainingEnded}
	for i, typ := range types {
		if _, err := e.db.AppendEvent(ctx, &trainyard.Event{JobID: id, Seq: i + 1, Type: typ, Data: map[string]any{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	page := e.call("GET", "/v1/preview/training-jobs/"+id+"/events?limit=3", nil).JSON(t)
	data := page["data"].([]any)
	if len(data) != 3 || page["has_more"] != true || data[0].(map[string]any)["type"] != "training_started" {
		t.Fatalf("first page = %v", page)
	}
	rest := e.call("GET", fmt.Sprintf("/v1/preview/training-jobs/%s/events?after=%s", id, page["last_id"]), nil).JSON(t)
	if d := rest["data"].([]any); len(d) != 3 || d[0].(map[string]any)["type"] != "training_resumed" || d[2].(map[string]any)["type"] != "training_ended" || rest["has_more"] != false {
		t.Fatalf("second page = %v", rest)
	}
	mustStatus(t, e.call("GET", "/v1/preview/training-jobs/"+id+"/events", nil, as(e.otherKey)), http.StatusNotFound)
	mustStatus(t, e.call("GET", "/v1/preview/training-jobs/"+id+"/events?after=0190f5f0-0000-7000-8000-000000000000", nil), http.StatusUnprocessableEntity)
	mustStatus(t, e.call("GET", "/v1/preview/training-jobs/"+id+"/events?limit=0", nil), http.StatusUnprocessableEntity)
}

func TestCancelTrainingJob(t *testing.T) {
	t.Parallel()
	e, fw := newJobsEnv(t)
	id := e.submit(e.createModel("cancel"))
	res := e.call("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil)
	mustStatus(t, res, http.StatusOK)
	if _, cancelled := fw.counts(); cancelled != 1 || res.JSON(t)["id"] != id {
		t.Fatalf("cancel: %d calls, body %s", cancelled, res.Body)
	}
	// A finished job is left alone.
	done := trainyard.JobCompleted
	if err := e.db.UpdateJob(context.Background(), id, trainyard.JobUpdate{Status: &done}); err != nil {
		t.Fatal(err)
	}
	res = e.call("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil)
	if _, cancelled := fw.counts(); cancelled != 1 || res.JSON(t)["status"] != "COMPLETED" {
		t.Fatalf("cancel of a completed job: %d calls, body %s", cancelled, res.Body)
	}
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil, as(e.otherKey)), http.StatusNotFound)
}

func TestListTrainingJobs(t *testing.T) {
	t.Parallel()
	e, _ := newJobsEnv(t)
	a, b := e.createModel("list-a"), e.createModel("list-b")
	var ids []string
	for _, m := range []string{a, b, a, a} {
		ids = append(ids, e.submit(m))
	}
	all := e.call("GET", "/v1/preview/training-jobs", nil).JSON(t)["data"].([]any)
	if len(all) != 4 || all[0].(map[string]any)["id"] != ids[3] {
		t.Fatalf("jobs, newest first = %v", all)
	}
	page := e.call("GET", "/v1/preview/training-jobs?model_id="+a+"&limit=2&order=asc", nil).JSON(t)
	data := page["data"].([]any)
	if len(data) != 2 || data[0].(map[string]any)["id"] != ids[0] || data[1].(map[string]any)["id"] != ids[2] || page["has_more"] != true {
		t.Fatalf("model a, oldest first = %v", page)
	}
	next := e.call("GET", "/v1/preview/training-jobs?model_id="+a+"&limit=2&order=asc&after="+ids[2], nil).JSON(t)["data"].([]any)
	if len(next) != 1 || next[0].(map[string]any)["id"] != ids[3] {
		t.Fatalf("next page = %v", next)
	}
	if d := e.call("GET", "/v1/preview/training-jobs", nil, as(e.otherKey)).JSON(t)["data"].([]any); len(d) != 0 {
		t.Fatalf("another account sees %d jobs", len(d))
	}
	mustStatus(t, e.call("GET", "/v1/preview/training-jobs?model_id="+a, nil, as(e.otherKey)), http.StatusNotFound)
}

func TestUploadFile(t *testing.T) {
	t.Parallel()
	fw := &fakeWorkflows{states: map[string]workflows.WorkflowState{}, progress: map[string]*workflows.Progress{}}
	e := newEnv(t, func(_ *api.Config, d *api.Deps) {
		d.Workflows = fw
		d.Files = d.Blobs.(api.FileStore)
	})
	data := `{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}` + "\n\n" +
		`{"messages": [{"role": "user", "content": "bye"}, {"role": "assistant", "content": "ciao"}], "tools": []}` + "\n"
	res := e.call("POST", "/v1/preview/files?project=proj&name=greetings", data)
	mustStatus(t, res, http.StatusOK)
	got := res.JSON(t)
	if got["url"] != "wandb-artifact:///team-a/proj/greetings:v0" || got["lines"] != float64(2) || got["bytes"] != float64(len(data)) {
		t.Fatalf("upload = %s", res.Body)
	}
	mustStatus(t, e.call("POST", "/v1/preview/files?project=proj&name=greetings", data), http.StatusConflict)
	// The other account has its own namespace.
	mustStatus(t, e.call("POST", "/v1/preview/files?project=proj&name=greetings", data, as(e.otherKey)), http.StatusOK)

	bad := e.call("POST", "/v1/preview/files?project=proj&name=bad", `{"messages": []}`+"\n"+`{"oops`)
	if l := locs(t, bad.Errors(t)); len(l) != 2 || l[0] != `["body",1] value_error` || l[1] != `["body",2] value_error` {
		t.Fatalf("bad JSONL errors = %v", l)
	}
	if l := locs(t, e.call("POST", "/v1/preview/files?project=proj", data).Errors(t)); len(l) != 1 || l[0] != `["query","name"] missing` {
		t.Fatalf("missing name errors = %v", l)
	}
	mustStatus(t, e.call("POST", "/v1/preview/files?project=proj&name=empty", ""), http.StatusUnprocessableEntity)
	for _, q := range []string{"project=..&name=x", "project=.&name=x", "project=p&name=..", "project=p&name=."} {
		if l := locs(t, e.call("POST", "/v1/preview/files?"+q, data).Errors(t)); len(l) != 1 || !strings.HasSuffix(l[0], "value_error") {
			t.Errorf("%s: errors %v, want one value_error", q, l)
		}
	}

	model := e.createModel("sft-upload")
	res = e.call("POST", "/v1/preview/sft-training-jobs", fmt.Sprintf(`{"model_id": %q, "training_data_url": %q}`, model, got["url"]))
	mustStatus(t, res, http.StatusOK)
}

// upload stores JSONL data as the artifact project/name of the env's first
// account, through the route.
func (e *env) upload(project, name, data string) {
	e.t.Helper()
	mustStatus(e.t, e.call("POST", "/v1/preview/files?project="+project+"&name="+name, data), http.StatusOK)
}
