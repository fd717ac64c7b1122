package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/catalog"
	"github.com/trainyard/trainyard/internal/devstack"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/retention"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/storage/postgres"
	"github.com/trainyard/trainyard/storage/s3"
	"github.com/trainyard/trainyard/worker"
	"github.com/trainyard/trainyard/workflows"
)

// baseModel is the model every test trains.
const baseModel = "trainyard/tiny-chat"

// stackOptions tune one test's stack.
type stackOptions struct {
	// Workflow options of the jobs the API starts.
	Workflow workflows.Options
	// Activities configures the workers.
	Activities activities.Config
	// Temporal is the server of the stack; nil: the one shared by every
	// test of the process.
	Temporal *devstack.Stack
	// Registry makes worker processes announce themselves in the worker
	// registry and look workers up in it, as trainyard worker does.
	Registry bool
	// Bases are base models besides tiny-chat (name: snapshot directory)
	// that the API accepts and worker processes hold.
	Bases map[string]string
}

// stack is one test's trainyard: its own database schema, bucket and task
// queue on the shared Temporal server, the API over HTTP, and an account.
type stack struct {
	t     testing.TB
	opts  stackOptions
	dbURL string
	db    *postgres.DB
	s3cfg s3.Config
	blobs *s3.Store
	queue string
	tc    client.Client
	wf    *workflows.Client
	srv   *httptest.Server
	acct  *trainyard.Account
	key   string
	log   *zap.Logger
	// logs holds every entry of log at info level and above.
	logs *observer.ObservedLogs
	// workerDB, when set, is the database the workers use instead of db
	// (one reached through a fault-injecting proxy, say).
	workerDB *postgres.DB
	temporal *devstack.Stack
}

func newStack(t testing.TB, opts stackOptions) *stack {
	t.Helper()
	ctx := context.Background()
	st := opts.Temporal
	if st == nil {
		st = temporalServer(t)
	}
	obs, logs := observer.New(zap.InfoLevel)
	s := &stack{t: t, opts: opts, queue: taskQueue(), logs: logs, temporal: st,
		log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).WithOptions(
			zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, obs) }))}
	s.dbURL = pgtest.URL(t)
	var err error
	if s.db, err = postgres.Open(ctx, s.dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.db.Close)
	s.s3cfg = s3test.Config(t)
	if s.blobs, err = s3.New(ctx, s.s3cfg); err != nil {
		t.Fatal(err)
	}
	s.tc, err = client.Dial(client.Options{HostPort: st.FrontendAddr(), Namespace: st.Namespace(), Logger: worker.NewLogger(s.log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.tc.Close)
	s.wf = workflows.NewClient(s.tc, workflows.ClientOptions{TaskQueue: s.queue, Workflow: opts.Workflow, Jobs: s.db, Events: s.db, Models: s.db, Blobs: s.blobs})

	if s.acct, err = s.db.CreateAccount(ctx, "e2e"); err != nil {
		t.Fatal(err)
	}
	if s.key, _, err = s.db.CreateAPIKey(ctx, s.acct.ID, ""); err != nil {
		t.Fatal(err)
	}
	s.srv = s.apiServer(s.wf)
	return s
}

// apiServer serves the API over the stack's stores with wf as Temporal.
func (s *stack) apiServer(wf api.JobWorkflows) *httptest.Server {
	chat := serving.New(serving.Config{BaseModels: []string{baseModel},
		OpenBase: func(name string) (*engine.Base, error) { return sharedBases.Base(context.Background(), name) },
	}, s.db, s.blobs, s.log)
	bases := []string{baseModel}
	for name := range s.opts.Bases {
		bases = append(bases, name)
	}
	srv := api.New(api.Config{BaseModels: bases, Jobs: api.JobsConfig{Data: jobspec.DataPolicy{S3: s.blobs.ReadPolicy()}}}, api.Deps{
		Accounts: s.db, Models: s.db, Logs: s.db, Jobs: s.db, Events: s.db, Blobs: s.blobs,
		Workflows: wf, Files: s.blobs, Logger: s.log, Chat: chat,
		Retention: &retention.Pruner{Models: s.db, Blobs: s.blobs},
	})
	hs := httptest.NewServer(srv.Handler())
	s.t.Cleanup(hs.Close)
	return hs
}

// withWorkflows returns the stack as seen through an API whose Temporal
// is wf.
func (s *stack) withWorkflows(wf api.JobWorkflows) *stack {
	c := *s
	c.srv = s.apiServer(wf)
	return &c
}

// activities builds activities over the stack's stores.
func (s *stack) activities() *activities.Activities {
	s.t.Helper()
	cfg := s.opts.Activities
	cfg.Data.S3 = s.blobs.ReadPolicy()
	db := s.db
	if s.workerDB != nil {
		db = s.workerDB
	}
	deps := activities.Deps{
		Jobs: db, Events: db, Models: db, Blobs: s.blobs, Queue: db, Workflows: s.wf,
		Bases: sharedBases, Files: s.blobs, Logger: s.log,
		HTTP: activities.NewFetchClient(activities.AddressPolicy{AllowLocal: true}), // test servers listen on loopback
	}
	if s.opts.Registry {
		deps.Workers = db
	}
	acts, err := activities.New(deps, cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return acts
}

// sharedBases loads tiny-chat once for every in-process worker.
var sharedBases = catalog.New(nil)

// startWorker runs a worker in the test process until the test ends. With
// the stack's Registry option it announces itself in the worker registry
// and looks other workers up there.
func (s *stack) startWorker() *worker.Worker {
	s.t.Helper()
	cfg := worker.Config{TaskQueue: s.queue, StopTimeout: 5 * time.Second}
	if s.opts.Registry {
		cfg.Registry = s.db
	}
	w, err := worker.New(s.tc, s.activities(), cfg, s.log)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(w.Stop)
	return w
}

// call sends a request to the API as the stack's account and decodes the
// JSON answer (nil for a non-object). body is nil, a string or []byte sent
// as is, or a value sent as JSON.
func (s *stack) call(method, path string, body any, headers ...string) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// mustCall is call that requires 200.
func (s *stack) mustCall(method, path string, body any, headers ...string) map[string]any {
	s.t.Helper()
	status, out := s.call(method, path, body, headers...)
	if status != http.StatusOK {
		s.t.Fatalf("%s %s: status %d: %v", method, path, status, out)
	}
	return out
}

// createModel creates a tiny-chat model and returns its id.
func (s *stack) createModel(name string) string {
	s.t.Helper()
	m := s.mustCall("POST", "/v1/preview/models", map[string]any{
		"entity": nil, "project": "e2e", "name": name, "base_model": baseModel, "return_existing": false,
	})
	return m["id"].(string)
}

// event is a job event as the API lists it.
type event struct {
	ID   string         `json:"id"`
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// events reads every event of a job through the API, page by page.
func (s *stack) events(jobID string) []event {
	s.t.Helper()
	var out []event
	after := ""
	for {
		path := fmt.Sprintf("/v1/preview/training-jobs/%s/events?limit=100", jobID)
		if after != "" {
			path += "&after=" + after
		}
		page := s.mustCall("GET", path, nil)
		js, _ := json.Marshal(page["data"])
		var evs []event
		if err := json.Unmarshal(js, &evs); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, evs...)
		if page["has_more"] != true {
			return out
		}
		after = page["last_id"].(string)
	}
}

// waitWorkflowClosed polls the job's workflow until it is no longer running
// and returns its state.
func (s *stack) waitWorkflowClosed(jobID string, timeout time.Duration) workflows.WorkflowState {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := s.wf.DescribeJob(context.Background(), jobID)
		if err != nil {
			s.t.Fatal(err)
		}
		if !st.Running {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the workflow of job %s still runs after %s", jobID, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitJob polls the job until it is terminal and returns it.
func (s *stack) waitJob(jobID string, timeout time.Duration) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		job := s.mustCall("GET", "/v1/preview/training-jobs/"+jobID, nil)
		if trainyard.JobStatus(job["status"].(string)).Terminal() {
			return job
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s not finished after %s: %v", jobID, timeout, job)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitEvents polls until the job has at least n events.
func (s *stack) waitEvents(jobID string, n int, timeout time.Duration) []event {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		evs := s.events(jobID)
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s has %d events after %s, want %d", jobID, len(evs), timeout, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkpointSteps lists the model's checkpoint steps through the API.
func (s *stack) checkpointSteps(modelID string) []int {
	s.t.Helper()
	page := s.mustCall("GET", "/v1/preview/models/"+modelID+"/checkpoints?limit=100", nil)
	var steps []int
	for _, c := range page["data"].([]any) {
		steps = append(steps, int(c.(map[string]any)["step"].(float64)))
	}
	return steps
}

// checkpointFile reads one file of a checkpoint from S3.
func (s *stack) checkpointFile(modelID string, step int, name string) []byte {
	s.t.Helper()
	rc, err := s.blobs.GetCheckpointFile(context.Background(), modelID, step, name)
	if err != nil {
		s.t.Fatalf("checkpoint %d %s: %v", step, name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// noAlarms fails the test when the stack logged an error, or warned of a
// failed heartbeat: what normal operation (a cancel, a terminate) does must
// not look like a fault to whoever watches the logs.
func (s *stack) noAlarms() {
	s.t.Helper()
	for _, e := range s.logs.All() {
		if e.Level >= zapcore.ErrorLevel || (e.Level == zapcore.WarnLevel && strings.Contains(e.Message, "Heartbeat")) {
			s.t.Errorf("logged %s %q %v", e.Level, e.Message, e.ContextMap())
		}
	}
}
