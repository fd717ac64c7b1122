package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// asNewAccount returns the stack as seen by a second account.
func (s *stack) asNewAccount(entity string) *stack {
	s.t.Helper()
	ctx := context.Background()
	acct, err := s.db.CreateAccount(ctx, entity)
	if err != nil {
		s.t.Fatal(err)
	}
	key, _, err := s.db.CreateAPIKey(ctx, acct.ID, "")
	if err != nil {
		s.t.Fatal(err)
	}
	c := *s
	c.acct, c.key = acct, key
	return &c
}

// TestNoAccountTrainsOnAnothersUpload is issue 16's first defect: account B
// trained on account A's private upload through an s3:// URL that walked out
// of an allowed prefix. Every spelling is now refused by the API, and a job
// that reaches a worker anyway (written straight into the database) fails
// there without reading a byte.
func TestNoAccountTrainsOnAnothersUpload(t *testing.T) {
	t.Parallel()
	a := newStack(t, stackOptions{})
	a.startWorker()
	up := a.mustCall("POST", "/v1/preview/files?project=demo&name=secretfile", sftJSONL(4))
	secret := "files/" + a.acct.ID + "/artifacts/demo/secretfile/v0/data.jsonl"
	if _, err := a.blobs.HasFile(context.Background(), a.acct.ID, "artifacts/demo/secretfile/v0/data.jsonl"); err != nil {
		t.Fatalf("the upload is not where the attack expects it: %v", err)
	}

	b := a.asNewAccount("mallory")
	model := b.createModel("thief")
	bucket := a.blobs.Bucket()
	urls := []string{
		up["url"].(string), // A's artifact URL names A's entity
		"wandb-artifact:///mallory/demo/secretfile",
		"wandb-artifact:///mallory/../" + a.acct.ID + "/secretfile",
		"s3://" + bucket + "/" + secret,
		"s3://" + bucket + "/x/../" + secret,
		"s3://" + bucket + "/x/%2E%2E/" + secret,
		"s3://" + bucket + "/x%2F..%2F" + secret,
		"s3://" + bucket + "//" + secret,
		"s3://" + bucket + "/./" + secret,
		"s3://" + strings.ToUpper(bucket) + "/" + secret,
		"s3://" + bucket + "./" + secret,
	}
	for _, u := range urls {
		status, body := b.call("POST", "/v1/preview/sft-training-jobs", map[string]any{"model_id": model, "training_data_url": u})
		if status != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d %v, want 422", u, status, body)
		}
	}
	if page := b.mustCall("GET", "/v1/preview/training-jobs", nil); len(page["data"].([]any)) != 0 {
		t.Fatalf("account B has jobs: %v", page["data"])
	}

	// Past the API (say, an older server accepted it): the worker refuses.
	cfg, _ := json.Marshal(jobspec.JobConfig{TrainingDataURL: "s3://" + bucket + "/x/../" + secret})
	job, _, err := b.db.CreateJob(context.Background(), &trainyard.Job{ID: uuid.Must(uuid.NewV7()).String(),
		AccountID: b.acct.ID, ModelID: model, Kind: trainyard.JobKindSFT, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.wf.StartJob(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	got := b.waitJob(job.ID, time.Minute)
	if got["status"] != "FAILED" || !strings.Contains(got["error"].(string), "segment") {
		t.Fatalf("smuggled job = %v", got)
	}
	if steps := b.checkpointSteps(model); len(steps) != 0 {
		t.Fatalf("account B's model has checkpoints %v", steps)
	}
}

// TestSlowDataDelaysNoOtherAccount is issue 16's third defect: an SFT job
// whose training_data_url answers slowly held the worker's only training
// slot while it downloaded, delaying another account's RL job from 1 s to
// 42 s. The download now runs on the fetch queue, so account B's job starts
// at once while account A's data still trickles in.
func TestSlowDataDelaysNoOtherAccount(t *testing.T) {
	t.Parallel()
	drip := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := w.Write([]byte("\n")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(drip.Close)
	a := newStack(t, stackOptions{})
	a.startWorker()
	slowModel := a.createModel("slow")
	slow := a.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
		"model_id": slowModel, "training_data_url": drip.URL + "/train.jsonl"})["id"].(string)
	// A's job is fetching before B submits.
	deadline := time.Now().Add(30 * time.Second)
	for a.mustCall("GET", "/v1/preview/training-jobs/"+slow, nil)["phase"] != "fetching" {
		if time.Now().After(deadline) {
			t.Fatalf("account A's job never started fetching: %v", a.mustCall("GET", "/v1/preview/training-jobs/"+slow, nil))
		}
		time.Sleep(50 * time.Millisecond)
	}

	b := a.asNewAccount("bystander")
	model := b.createModel("quick")
	start := time.Now()
	id := b.mustCall("POST", "/v1/preview/training-jobs", sampleRL(t, 2, 4, 1).body(model, 5e-3))["id"].(string)
	job := b.waitJob(id, 2*time.Minute)
	took := time.Since(start)
	if job["status"] != "COMPLETED" {
		t.Fatalf("account B's job = %v", job)
	}
	if took > 15*time.Second {
		t.Fatalf("account B's job took %v while account A's data trickled in", took)
	}
	if st := a.mustCall("GET", "/v1/preview/training-jobs/"+slow, nil); st["status"] != "QUEUED" || st["phase"] != "fetching" {
		t.Fatalf("account A's job = %v, want it still fetching", st)
	}
	t.Logf("account B's RL job completed %v after submission while account A's download trickled", took.Round(time.Millisecond))
	a.mustCall("POST", "/v1/preview/training-jobs/"+slow+"/cancel", nil)
	if st := a.waitJob(slow, time.Minute); st["status"] != "CANCELLED" {
		t.Fatalf("account A's job after cancel = %v", st)
	}
}

// TestRefusedDataURLFailsFast: a training_data_url whose host refuses
// connections is the user's mistake; the job fails after a few attempts
// instead of retrying for minutes, and says why.
func TestRefusedDataURLFailsFast(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.createModel("refused")
	ln := httptest.NewServer(http.NotFoundHandler())
	refused := ln.URL + "/train.jsonl"
	ln.Close() // nothing listens there now
	if _, err := url.Parse(refused); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{"model_id": model, "training_data_url": refused})["id"].(string)
	// The reason shows in GET from the first failed attempt on (last_error),
	// then as the job's error.
	var visible time.Duration
	var job map[string]any
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		job = s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil)
		if le, _ := job["last_error"].(map[string]any); visible == 0 && (le != nil || job["error"] != nil) {
			visible = time.Since(start)
			if le != nil && !strings.Contains(fmt.Sprint(le["message"]), "refused") {
				t.Fatalf("last_error = %v", le)
			}
		}
		if trainyard.JobStatus(job["status"].(string)).Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job after 2 minutes = %v", job)
		}
	}
	took := time.Since(start)
	if job["status"] != "FAILED" || !strings.Contains(job["error"].(string), "refused the connection (3 attempts)") {
		t.Fatalf("job = %v", job)
	}
	t.Logf("a refused training_data_url: its reason visible in GET %v after submission, the job FAILED after %v",
		visible.Round(time.Millisecond), took.Round(time.Millisecond))
}
