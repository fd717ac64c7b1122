package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/storage/s3"
	"github.com/trainyard/trainyard/workflows"
)

// fakeWorkflows stands in for Temporal behind api.JobWorkflows: it records
// starts and cancels and answers describe/progress from its maps. The real
// implementation is exercised end to end in internal/e2e.
type fakeWorkflows struct {
	mu        sync.Mutex
	started   []string
	cancelled []string
	startErr  error
	// controls records pause and resume requests ("pause:<id>"), which
	// fail with controlErr.
	controls   []string
	controlErr error
	states     map[string]workflows.WorkflowState
	progress   map[string]*workflows.Progress
	db         interface {
		trainyard.JobStore
		trainyard.EventStore
	}
}

// StartJob records the start, or fails with startErr (Temporal down).
func (f *fakeWorkflows) StartJob(_ context.Context, job *trainyard.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return f.startErr
	}
	f.started = append(f.started, job.ID)
	return nil
}

// CancelJob records the cancellation request.
func (f *fakeWorkflows) CancelJob(_ context.Context, jobID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, jobID)
	return nil
}

// PauseJob records the request and answers controlErr.
func (f *fakeWorkflows) PauseJob(_ context.Context, jobID string) error {
	return f.control("pause", jobID)
}

// ResumeJob records the request and answers controlErr.
func (f *fakeWorkflows) ResumeJob(_ context.Context, jobID string) error {
	return f.control("resume", jobID)
}

func (f *fakeWorkflows) control(verb, jobID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controls = append(f.controls, verb+":"+jobID)
	return f.controlErr
}

// JobProgress answers from progress; a job without an entry has no worker.
func (f *fakeWorkflows) JobProgress(_ context.Context, jobID string) (*workflows.Progress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.progress[jobID]; ok {
		return p, nil
	}
	return nil, trainyard.Errorf(trainyard.EUNAVAILABLE, "no worker")
}

// DescribeJob answers from states; a job without an entry has no workflow.
func (f *fakeWorkflows) DescribeJob(_ context.Context, jobID string) (workflows.WorkflowState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.states[jobID]; ok {
		return st, nil
	}
	return workflows.WorkflowState{}, nil
}

// ReconcileJob closes the job the way workflows.Client does.
func (f *fakeWorkflows) ReconcileJob(ctx context.Context, job *trainyard.Job) (*trainyard.Job, error) {
	st, _ := f.DescribeJob(ctx, job.ID)
	if job.Status.Terminal() || !st.Exists || st.Running {
		return job, nil
	}
	status, msg := activities.ClosedWorkflowOutcome(st.Status)
	if err := activities.Finalize(ctx, f.db, job.ID, status, msg); err != nil {
		return nil, err
	}
	return f.db.GetJob(ctx, job.ID)
}

func (f *fakeWorkflows) counts() (started, cancelled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started), len(f.cancelled)
}

// newJobsEnv is an env whose server has the job routes.
func newJobsEnv(t testing.TB, mods ...func(*api.Config, *api.Deps)) (*env, *fakeWorkflows) {
	fw := &fakeWorkflows{states: map[string]workflows.WorkflowState{}, progress: map[string]*workflows.Progress{}}
	e := newEnv(t, append([]func(*api.Config, *api.Deps){func(c *api.Config, d *api.Deps) {
		d.Workflows = fw
		store := d.Blobs.(*s3.Store)
		d.Files = store
		c.Jobs.Data = jobspec.DataPolicy{S3: trainyard.S3ReadPolicy{OwnBucket: store.Bucket(), ReadBuckets: []string{"bucket", "data"}}}
	}}, mods...)...)
	fw.db = e.db
	return e, fw
}

// rlBody is a CreateTrainingJob body with the ART trajectories.
func rlBody(modelID string, experimental string) string {
	if experimental == "" {
		experimental = "null"
	}
	var gs []string
	for _, g := range artTrajectories {
		gs = append(gs, `{"trajectories": [`+strings.Join(g, ", ")+`]}`)
	}
	return fmt.Sprintf(`{"model_id": %q, "trajectory_groups": [%s], "experimental_config": %s}`, modelID, strings.Join(gs, ", "), experimental)
}

func TestCreateTrainingJob(t *testing.T) {
	t.Parallel()
	e, fw := newJobsEnv(t)
	model := e.createModel("rl")
	body := rlBody(model, `{"learning_rate": 1e-5, "loss_fn": "ppo", "scale_rewards": null, "unknown_option": 1}`)

	res := e.call("POST", "/v1/preview/training-jobs", body)
	mustStatus(t, res, http.StatusOK)
	id := res.JSON(t)["id"].(string)
	job, err := e.db.FindJob(context.Background(), e.acct.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if job.Kind != trainyard.JobKindRL || job.Status != trainyard.JobQueued || job.ModelID != model || job.WorkflowID != "training-job-"+id {
		t.Fatalf("job = %+v", job)
	}
	var cfg jobspec.JobConfig
	if err := json.Unmarshal(job.Config, &cfg); err != nil || !strings.Contains(string(cfg.ExperimentalConfig), `"loss_fn": "ppo"`) {
		t.Fatalf("config = %s (%v)", job.Config, err)
	}
	rc, err := e.blobs.GetJobInput(context.Background(), id, jobspec.InputFile)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(rc)
	rc.Close()
	// What is stored is the validated input, decoded as the worker will.
	type input struct {
		TrajectoryGroups []trainyard.TrajectoryGroup `json:"trajectory_groups"`
	}
	var got, sent input
	if err := json.Unmarshal(stored, &got); err != nil {
		t.Fatalf("the stored input does not decode: %v", err)
	}
	if err := json.Unmarshal([]byte(body), &sent); err != nil {
		t.Fatal(err)
	}
	// The same values, an empty list and an absent one alike.
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(sent)
	if norm := func(b []byte) string { return strings.ReplaceAll(string(b), "[]", "null") }; norm(a) != norm(b) {
		t.Fatalf("the stored trajectory groups differ from the ones sent\n%s\n%s", a, b)
	}
	if started, _ := fw.counts(); started != 1 {
		t.Fatalf("%d workflow starts", started)
	}

	// The same Idempotency-Key returns the same job; another key makes
	// another job.
	first := e.call("POST", "/v1/preview/training-jobs", body, header("Idempotency-Key", "step-7"))
	again := e.call("POST", "/v1/preview/training-jobs", body, header("Idempotency-Key", "step-7"))
	other := e.call("POST", "/v1/preview/training-jobs", body, header("Idempotency-Key", "step-8"))
	mustStatus(t, again, http.StatusOK)
	if first.JSON(t)["id"] != again.JSON(t)["id"] || first.JSON(t)["id"] == other.JSON(t)["id"] {
		t.Fatalf("ids: %s %s %s", first.Body, again.Body, other.Body)
	}
	page, err := e.db.ListJobs(context.Background(), e.acct.ID, model, trainyard.ListOptions{Limit: 100})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("%d jobs after 4 POSTs, 2 with one key (%v)", len(page.Items), err)
	}
	// The key bound to another request is a conflict.
	sft := fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://bucket/data.jsonl"}`, model)
	mustStatus(t, e.call("POST", "/v1/preview/sft-training-jobs", sft, header("Idempotency-Key", "step-7")), http.StatusConflict)
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", body, header("Idempotency-Key", "bad key")), http.StatusUnprocessableEntity)
}

func TestCreateTrainingJobWhileTemporalIsDown(t *testing.T) {
	t.Parallel()
	e, fw := newJobsEnv(t)
	fw.startErr = trainyard.Errorf(trainyard.EUNAVAILABLE, "temporal down")
	model := e.createModel("down")
	res := e.call("POST", "/v1/preview/training-jobs", rlBody(model, ""))
	mustStatus(t, res, http.StatusOK)
	job, err := e.db.FindJob(context.Background(), e.acct.ID, res.JSON(t)["id"].(string))
	if err != nil || job.Status != trainyard.JobQueued {
		t.Fatalf("job = %+v, %v; an accepted job stays QUEUED until its workflow starts", job, err)
	}
}

func TestCreateTrainingJobValidation(t *testing.T) {
	t.Parallel()
	e, fw := newJobsEnv(t)
	model := e.createModel("v")
	otherModel := e.createModel("v2")
	cases := []struct {
		body string
		want []string
	}{
		{`{"trajectory_groups": []}`, []string{`["body","model_id"] missing`, `["body","trajectory_groups"] too_short`}},
		{rlBody("nope", ""), []string{`["body","model_id"] uuid_parsing`}},
		{rlBody(model, `{"importance_sampling_level": "average"}`), []string{`["body","experimental_config","importance_sampling_level"] value_error`}},
		{rlBody(model, `{"importance_sampling_level": "bogus"}`), []string{`["body","experimental_config","importance_sampling_level"] literal_error`}},
		{rlBody(model, `{"learning_rate": "1e-5"}`), []string{`["body","experimental_config","learning_rate"] float_type`}},
		{rlBody(model, `{"learning_rate": -1, "mask_prob_ratio": true}`), []string{
			`["body","experimental_config","learning_rate"] value_error`, `["body","experimental_config","mask_prob_ratio"] value_error`}},
		{rlBody(model, `[1]`), []string{`["body","experimental_config"] dict_type`}},
	}
	for _, c := range cases {
		res := e.call("POST", "/v1/preview/training-jobs", c.body)
		if got := locs(t, res.Errors(t)); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%.80s...: errors %v, want %v", c.body, got, c.want)
		}
	}
	// Unknown models and other accounts' models are 404.
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", rlBody("0190f5f0-0000-7000-8000-000000000000", "")), http.StatusNotFound)
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", rlBody(otherModel, ""), as(e.otherKey)), http.StatusNotFound)
	if started, _ := fw.counts(); started != 0 {
		t.Fatalf("%d workflows started for invalid requests", started)
	}
}

func TestCreateSFTTrainingJob(t *testing.T) {
	t.Parallel()
	e, fw := newJobsEnv(t)
	model := e.createModel("sft")
	ok := func(url, config, experimental string) string {
		t.Helper()
		res := e.call("POST", "/v1/preview/sft-training-jobs", fmt.Sprintf(`{"model_id": %q, "training_data_url": %q, "config": %s, "experimental_config": %s}`,
			model, url, config, experimental))
		mustStatus(t, res, http.StatusOK)
		return res.JSON(t)["id"].(string)
	}
	e.upload("proj", "data", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello\"}]}\n")
	id := ok("wandb-artifact:///team-a/proj/data:v0", `{"batch_size": "auto", "learning_rate": [1e-4, 2e-4]}`, `{"num_epochs": 2}`)
	job, err := e.db.FindJob(context.Background(), e.acct.ID, id)
	if err != nil || job.Kind != trainyard.JobKindSFT {
		t.Fatalf("job = %+v %v", job, err)
	}
	var cfg jobspec.JobConfig
	if err := json.Unmarshal(job.Config, &cfg); err != nil || cfg.TrainingDataURL != "wandb-artifact:///team-a/proj/data:v0" {
		t.Fatalf("config = %s", job.Config)
	}
	ok("https://example.com/train.jsonl", "null", "null")
	ok("s3://data/train.jsonl", `{"batch_size": 2, "learning_rate": 1e-4}`, "null")
	if started, _ := fw.counts(); started != 3 {
		t.Fatalf("%d starts", started)
	}

	for body, want := range map[string]string{
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "file:///etc/passwd"}`, model):                                      `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "wandb-artifact:///team-b/proj/data"}`, model):                      `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "gs://x/y"}`, model):                                                `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://bucket/k", "config": {"batch_size": "big"}}`, model):          `["body","config","batch_size","literal['auto']"] literal_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://bucket/k", "config": {"batch_size": 0}}`, model):              `["body","config","batch_size"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://bucket/k", "config": {"learning_rate": [1, "x"]}}`, model):    `["body","config","learning_rate",1] float_type`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://bucket/k", "experimental_config": {"num_epochs": 0}}`, model): `["body","experimental_config","num_epochs"] value_error`,
		fmt.Sprintf(`{"model_id": %q}`, model): `["body","training_data_url"] missing`,
		// Artifacts must exist, with the one version uploads have.
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "wandb-artifact:///team-a/proj/missing"}`, model): `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "wandb-artifact:///team-a/proj/data:v9"}`, model): `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "wandb-artifact:///team-a/proj/.."}`, model):      `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "wandb-artifact:///team-a/../data"}`, model):      `["body","training_data_url"] value_error`,
		// s3:// never reaches the service's own bucket, and other buckets
		// only from the list.
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://%s/files/%s/artifacts/proj/data/v0/data.jsonl"}`, model, e.blobs.Bucket(), e.acct.ID):       `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://%s/x/../files/%s/artifacts/proj/data/v0/data.jsonl"}`, model, e.blobs.Bucket(), e.other.ID): `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://bucket/%%2E%%2E/%s/files/x"}`, model, e.blobs.Bucket()):                                     `["body","training_data_url"] value_error`,
		fmt.Sprintf(`{"model_id": %q, "training_data_url": "s3://elsewhere/train.jsonl"}`, model):                                                            `["body","training_data_url"] value_error`,
	} {
		res := e.call("POST", "/v1/preview/sft-training-jobs", body)
		if got := locs(t, res.Errors(t)); strings.Join(got, "|") != want {
			t.Errorf("%s: errors %v, want %s", body, got, want)
		}
	}
}

// TestTrainingJobInputIsStoredValidated: what the API accepts in lax mode
// (a reward sent as a string, an integral float for an int) is stored as the
// value it stands for, so the worker's strict decoding reads it; out-of-range
// numbers and token ids are refused up front instead of failing the job.
func TestTrainingJobInputIsStoredValidated(t *testing.T) {
	t.Parallel()
	e, _ := newJobsEnv(t, func(_ *api.Config, d *api.Deps) { d.Bases = builtinBases{} })
	model := e.createModel("lax")
	traj := func(reward, token string) string {
		return `{"messages_and_choices": [{"role": "user", "content": "2+3?"}, {"index": 0, "finish_reason": "stop",
			"message": {"role": "assistant", "content": "5"}, "logprobs": {"content": [{"token": "` + token + `", "logprob": -0.1, "bytes": [53], "top_logprobs": []}]}}],
			"reward": ` + reward + `, "initial_policy_version": 1.0}`
	}
	body := func(r1, r2, token, experimental string) string {
		return fmt.Sprintf(`{"model_id": %q, "trajectory_groups": [{"trajectories": [%s, %s]}], "experimental_config": %s}`,
			model, traj(r1, token), traj(r2, token), experimental)
	}
	res := e.call("POST", "/v1/preview/training-jobs", body(`"0.75"`, "0", "token_id:53", "null"))
	mustStatus(t, res, http.StatusOK)
	rc, err := e.blobs.GetJobInput(context.Background(), res.JSON(t)["id"].(string), jobspec.InputFile)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var in struct {
		TrajectoryGroups []trainyard.TrajectoryGroup `json:"trajectory_groups"`
	}
	dec := json.NewDecoder(rc)
	if err := dec.Decode(&in); err != nil || in.TrajectoryGroups[0].Trajectories[0].Reward != 0.75 ||
		*in.TrajectoryGroups[0].Trajectories[0].InitialPolicyVersion != 1 {
		t.Fatalf("stored input: %+v %v", in, err)
	}
	for _, c := range []struct{ body, want string }{
		{body("1e308", "0", "token_id:53", "null"), `["body","trajectory_groups",0,"trajectories",0,"reward"] less_than_equal`},
		{body("1", "-1e7", "token_id:53", "null"), `["body","trajectory_groups",0,"trajectories",1,"reward"] greater_than_equal`},
		{body("1", "0", "token_id:99999999", "null"), `["body","trajectory_groups",0,"trajectories",0,"messages_and_choices",1,"logprobs","content",0,"token"] value_error|` +
			`["body","trajectory_groups",0,"trajectories",1,"messages_and_choices",1,"logprobs","content",0,"token"] value_error`},
		{body("1", "0", "token_id:53", `{"learning_rate": 1e39}`), `["body","experimental_config","learning_rate"] value_error`},
		{body("1", "0", "token_id:53", `{"learning_rate": 1e10}`), `["body","experimental_config","learning_rate"] value_error`},
		{body("1", "0", "token_id:53", `{"learning_rate": 0.5}`), `["body","experimental_config","learning_rate"] value_error`},
		{body("1", "0", "token_id:53", `{"kl_penalty_coef": 1e300}`), `["body","experimental_config","kl_penalty_coef"] value_error`},
	} {
		got := locs(t, e.call("POST", "/v1/preview/training-jobs", c.body).Errors(t))
		if strings.Join(got, "|") != c.want {
			t.Errorf("errors %v, want %s", got, c.want)
		}
	}
	// A tool call's arguments must be a JSON object, as in chat.
	bad := strings.Replace(body("1", "0", "token_id:53", "null"), `"content": "5"}`,
		`"content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}}]}`, 1)
	got := locs(t, e.call("POST", "/v1/preview/training-jobs", bad).Errors(t))
	if strings.Join(got, "|") != `["body","trajectory_groups",0,"trajectories",0,"messages_and_choices",1,"message","tool_calls",0,"function","arguments"] value_error` {
		t.Errorf("tool call arguments: errors %v", got)
	}
	// SFT learning rates have the same range.
	e.upload("p", "d", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello\"}]}\n")
	sft := fmt.Sprintf(`{"model_id": %q, "training_data_url": "wandb-artifact:///team-a/p/d", "config": {"learning_rate": [1e-4, 1e10]}}`, model)
	if got := locs(t, e.call("POST", "/v1/preview/sft-training-jobs", sft).Errors(t)); strings.Join(got, "|") != `["body","config","learning_rate",1] value_error` {
		t.Errorf("SFT learning rate: errors %v", got)
	}
}

// builtinBases opens the engine's built-in base models.
type builtinBases struct{}

func (builtinBases) Base(_ context.Context, name string) (*engine.Base, error) {
	return engine.OpenBuiltin(name)
}

// TestIdempotencyKeyComparesBodies: a key returns its job only for the same
// request, compared canonically (key order, spacing, number spelling); any
// other body with it is a 409 that names the job, even after that job
// failed (issue 14: a corrected training_data_url got the failed job back).
func TestIdempotencyKeyComparesBodies(t *testing.T) {
	t.Parallel()
	e, _ := newJobsEnv(t)
	model := e.createModel("idem")
	e.upload("p", "a", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello\"}]}\n")
	e.upload("p", "b", "{\"messages\": [{\"role\": \"user\", \"content\": \"yo\"}, {\"role\": \"assistant\", \"content\": \"hey\"}]}\n")
	key := header("Idempotency-Key", "sft-1")
	first := e.call("POST", "/v1/preview/sft-training-jobs", fmt.Sprintf(
		`{"model_id": %q, "training_data_url": "wandb-artifact:///team-a/p/a", "config": {"learning_rate": 0.001, "batch_size": 2}}`, model), key)
	mustStatus(t, first, http.StatusOK)
	same := e.call("POST", "/v1/preview/sft-training-jobs", fmt.Sprintf(
		`{"config":{"batch_size":2,"learning_rate":1e-3},"training_data_url":"wandb-artifact:///team-a/p/a","model_id":%q}`, model), key)
	mustStatus(t, same, http.StatusOK)
	if first.JSON(t)["id"] != same.JSON(t)["id"] {
		t.Fatalf("the same request, spelled differently, made another job: %s %s", first.Body, same.Body)
	}
	id := first.JSON(t)["id"].(string)
	failed := trainyard.JobFailed
	if err := e.db.UpdateJob(context.Background(), id, trainyard.JobUpdate{Status: &failed}); err != nil {
		t.Fatal(err)
	}
	other := e.call("POST", "/v1/preview/sft-training-jobs", fmt.Sprintf(
		`{"model_id": %q, "training_data_url": "wandb-artifact:///team-a/p/b", "config": {"learning_rate": 0.001, "batch_size": 2}}`, model), key)
	mustStatus(t, other, http.StatusConflict)
	if detail := other.JSON(t)["detail"].(string); !strings.Contains(detail, id) || !strings.Contains(detail, "different request") {
		t.Fatalf("409 detail %q", detail)
	}
	// RL bodies too: a changed reward is another request.
	rl := rlBody(model, `{"learning_rate": 1e-4}`)
	k2 := header("Idempotency-Key", "rl-1")
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", rl, k2), http.StatusOK)
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", rl, k2), http.StatusOK)
	changed := strings.Replace(rl, `"reward": 0.5`, `"reward": 0.25`, 1)
	if changed == rl {
		t.Fatal("the RL body has no reward 0.5 to change")
	}
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", changed, k2), http.StatusConflict)
}
