package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRetryCancelledJob: a cancelled job is retried as a new job with the
// same stored inputs, which trains from the model's newest checkpoint; the
// two are linked both ways, a job is retried once, an Idempotency-Key
// returns the same retry, and only FAILED or CANCELLED jobs can be retried.
func TestRetryCancelledJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("retry")
	first := s.mustCall("POST", "/v1/preview/training-jobs", sampleRL(t, 2, 4, 1).body(model, 1e-3))["id"].(string)
	if job := s.waitJob(first, 2*time.Minute); job["status"] != "COMPLETED" {
		t.Fatalf("first job = %v", job)
	}
	if status, out := s.call("POST", "/v1/preview/training-jobs/"+first+"/retry", nil); status != http.StatusConflict ||
		!strings.Contains(fmt.Sprint(out["detail"]), "only a FAILED or CANCELLED job") {
		t.Fatalf("retrying a completed job: %d %v", status, out)
	}
	long := s.longSFT(model, 20, 20)
	s.waitEvents(long, 3, time.Minute)
	s.mustCall("POST", "/v1/preview/training-jobs/"+long+"/cancel", nil)
	if job := s.waitJob(long, time.Minute); job["status"] != "CANCELLED" {
		t.Fatalf("long job = %v", job)
	}

	retry := s.mustCall("POST", "/v1/preview/training-jobs/"+long+"/retry", nil, "Idempotency-Key", "retry-1")
	again := s.mustCall("POST", "/v1/preview/training-jobs/"+long+"/retry", nil, "Idempotency-Key", "retry-1")
	if retry["id"] == nil || again["id"] != retry["id"] || retry["retry_of"] != long || retry["type"] != "sft" {
		t.Fatalf("retry %v, again %v", retry, again)
	}
	if status, out := s.call("POST", "/v1/preview/training-jobs/"+long+"/retry", nil); status != http.StatusConflict ||
		!strings.Contains(fmt.Sprint(out["detail"]), retry["id"].(string)) {
		t.Fatalf("a second retry: %d %v", status, out)
	}
	id := retry["id"].(string)
	job := s.waitJob(id, 3*time.Minute)
	if job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(2) || job["training_data_url"] == nil {
		t.Fatalf("retry = %v", job)
	}
	if orig := s.mustCall("GET", "/v1/preview/training-jobs/"+long, nil); orig["retried_by"] != id || orig["status"] != "CANCELLED" {
		t.Fatalf("original after the retry = %v", orig)
	}
	if steps := s.checkpointSteps(model); fmt.Sprint(steps) != "[1 2]" {
		t.Fatalf("checkpoints = %v", steps)
	}
}
