package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
