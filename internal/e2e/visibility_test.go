package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/workflows"
)

// TestRetryingStepIsVisible: a job whose data server keeps failing (503, a
// problem that may pass) is retried, and while it is, GET of the job says so
// (last_error with the message and attempt, phase fetching) instead of a
// silent QUEUED for minutes. The job's request is in its GET, and the
// cancel answer carries a phase like every job response.
func TestRetryingStepIsVisible(t *testing.T) {
	t.Parallel()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("retrying")
	url := busy.URL + "/train.jsonl"
	start := time.Now()
	id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{"model_id": model, "training_data_url": url,
		"config": map[string]any{"learning_rate": 1e-3}})["id"].(string)
	var job map[string]any
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		job = s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil)
		if job["last_error"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no last_error after a minute of retries: %v", job)
		}
	}
	took := time.Since(start)
	le := job["last_error"].(map[string]any)
	if !strings.Contains(le["message"].(string), "HTTP 503") || le["activity"] != "Fetch" || le["attempt"].(float64) < 2 ||
		job["phase"] != "fetching" || job["status"] != "QUEUED" {
		t.Fatalf("job while retrying = %v", job)
	}
	if job["training_data_url"] != url || job["config"].(map[string]any)["learning_rate"] != 1e-3 || job["experimental_config"] != nil {
		t.Fatalf("the job's request is not in its GET: %v", job)
	}
	t.Logf("the retrying fetch was visible in GET %v after submission: %v", took.Round(time.Millisecond), le)
	cancelled := s.mustCall("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil)
	if cancelled["phase"] == nil {
		t.Fatalf("cancel answer without a phase: %v", cancelled)
	}
	if done := s.waitJob(id, time.Minute); done["phase"] != "done" || done["last_error"] != nil {
		t.Fatalf("finished job = %v", done)
	}
}

// TestTemporalShowsProgress: what an operator sees of a running job in the
// Temporal UI is true (see checkTemporalView).
func TestTemporalShowsProgress(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{ChunkDuration: 10 * time.Second, HeartbeatInterval: 100 * time.Millisecond}})
	s.startWorker()
	model := s.createModel("visible")
	id := s.longSFT(model, 20, 100)
	s.waitEvents(id, 3, time.Minute)
	s.checkTemporalView(id)
	s.mustCall("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil)
	if job := s.waitJob(id, time.Minute); job["status"] != "CANCELLED" {
		t.Fatalf("job = %v", job)
	}
}

// checkTemporalView checks what an operator sees of a running job in the
// Temporal UI: the workflow's input carries the effective options (not
// zeros whose defaults apply somewhere inside), and the Train activity's
// heartbeat tells its step, total steps and last loss.
func (s *stack) checkTemporalView(jobID string) {
	s.t.Helper()
	ctx := context.Background()
	it := s.tc.GetWorkflowHistory(ctx, workflows.WorkflowID(jobID), "", false, 0)
	first, err := it.Next()
	if err != nil {
		s.t.Fatal(err)
	}
	var in workflows.SFTJobInput
	if err := converter.GetDefaultDataConverter().FromPayloads(
		first.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		s.t.Fatal(err)
	}
	if in.Options.HeartbeatTimeout == 0 || in.Options.TrainActivitiesPerRun == 0 {
		s.t.Fatalf("the workflow input shows options %+v, not the effective ones", in.Options)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		d, err := s.tc.DescribeWorkflowExecution(ctx, workflows.WorkflowID(jobID), "")
		if err != nil {
			s.t.Fatal(err)
		}
		for _, pa := range d.GetPendingActivities() {
			var hb struct {
				Saved, Step, TotalSteps int
				Loss                    *float64
			}
			if pa.GetActivityType().GetName() != "Train" || pa.GetHeartbeatDetails() == nil ||
				converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &hb) != nil {
				continue
			}
			if hb.Step >= 1 && hb.TotalSteps > 0 && hb.Loss != nil {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no Train heartbeat with step, total and loss in 10 s: %v (workflow %v, job %v)", d.GetPendingActivities(),
				d.GetWorkflowExecutionInfo().GetStatus(), s.mustCall("GET", "/v1/preview/training-jobs/"+jobID, nil))
		}
	}
}

// TestJobsAreSearchable: job workflows carry search attributes (account,
// project, model, base model, kind, status kept current, summary) and a
// summary, so
// the Temporal UI's filters find the jobs of a model, by status.
func TestJobsAreSearchable(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	name := "agent-" + strings.ReplaceAll(s.queue, "-", "")
	model := s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "demo", "name": name, "base_model": baseModel})["id"].(string)
	id := s.mustCall("POST", "/v1/preview/training-jobs", sampleRL(t, 2, 4, 1).body(model, 1e-3))["id"].(string)
	if job := s.waitJob(id, 2*time.Minute); job["status"] != "COMPLETED" {
		t.Fatalf("job = %v", job)
	}
	s.waitWorkflowClosed(id, time.Minute)
	ctx := context.Background()
	query := `TrainyardModelName="` + name + `" AND ExecutionStatus="Completed" AND TrainyardJobStatus="COMPLETED" AND TrainyardJobKind="rl"`
	var found []string
	for deadline := time.Now().Add(30 * time.Second); len(found) == 0; time.Sleep(200 * time.Millisecond) {
		resp, err := s.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			found = append(found, e.GetExecution().GetWorkflowId())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no workflow found by %s", query)
		}
	}
	if len(found) != 1 || found[0] != workflows.WorkflowID(id) {
		t.Fatalf("%s found %v", query, found)
	}
	d, err := s.tc.DescribeWorkflowExecution(ctx, workflows.WorkflowID(id), "")
	if err != nil {
		t.Fatal(err)
	}
	var summary string
	if p := d.GetExecutionConfig().GetUserMetadata().GetSummary(); p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &summary)
	}
	if want := "RL job of e2e/demo/" + name + " on " + baseModel; summary != want {
		t.Fatalf("summary %q, want %q", summary, want)
	}
	// The same text is a search attribute, which the UI's list can show as
	// a column (dashboard's TestDashboardInBrowser screenshots it).
	var column string
	if p := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()["TrainyardSummary"]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &column)
	}
	if column != summary {
		t.Fatalf("TrainyardSummary = %q, want the summary %q", column, summary)
	}
}
