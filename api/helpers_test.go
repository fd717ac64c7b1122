package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/storage/postgres"
	"github.com/trainyard/trainyard/storage/s3"
)

// testBaseModels is the registry the test server knows.
var testBaseModels = []string{"OpenPipe/Qwen3-14B-Instruct", "trainyard/tiny-chat"}

// env is one API server on its own PostgreSQL schema and S3 bucket, with
// two accounts: "team-a" (key) and "team-b" (otherKey).
type env struct {
	t        testing.TB
	srv      *api.Server
	db       *postgres.DB
	blobs    *s3.Store
	acct     *trainyard.Account
	key      string
	other    *trainyard.Account
	otherKey string
	logs     *observer.ObservedLogs
}

// newEnv builds an env; mods adjust the configuration and dependencies.
func newEnv(t testing.TB, mods ...func(*api.Config, *api.Deps)) *env {
	t.Helper()
	return newEnvOn(t, pgtest.New(t), mods...)
}

// newEnvOn is newEnv on a database the test opened itself.
func newEnvOn(t testing.TB, db *postgres.DB, mods ...func(*api.Config, *api.Deps)) *env {
	t.Helper()
	e := &env{t: t, db: db, blobs: s3test.New(t)}
	core, logs := observer.New(zapcore.DebugLevel)
	e.logs = logs
	ctx := context.Background()
	e.acct, e.key = e.account(ctx, "team-a")
	e.other, e.otherKey = e.account(ctx, "team-b")
	cfg := api.Config{BaseModels: testBaseModels}
	deps := api.Deps{
		Accounts: e.db, Models: e.db, Logs: e.db, Jobs: e.db, Events: e.db, Blobs: e.blobs,
		Checks: []api.HealthCheck{
			{Name: "database", Check: e.db.Ping},
			{Name: "storage", Check: e.blobs.Ping},
		},
		Logger: zap.New(core),
	}
	for _, m := range mods {
		m(&cfg, &deps)
	}
	e.srv = api.New(cfg, deps)
	return e
}

func (e *env) account(ctx context.Context, entity string) (*trainyard.Account, string) {
	e.t.Helper()
	a, err := e.db.CreateAccount(ctx, entity)
	if err != nil {
		e.t.Fatalf("create account %s: %v", entity, err)
	}
	key, _, err := e.db.CreateAPIKey(ctx, a.ID, "")
	if err != nil {
		e.t.Fatalf("create key for %s: %v", entity, err)
	}
	return a, key
}

// result is a recorded response.
type result struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object.
func (r result) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response %d is not a JSON object: %v\n%s", r.Status, err, r.Body)
	}
	return m
}

// Errors returns the detail list of a 422.
func (r result) Errors(t testing.TB) []map[string]any {
	t.Helper()
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("status = %d, want 422; body %s", r.Status, r.Body)
	}
	var v struct {
		Detail []map[string]any `json:"detail"`
	}
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("422 body: %v\n%s", err, r.Body)
	}
	return v.Detail
}

// reqOption adjusts a request before it is sent.
type reqOption func(*http.Request)

// as sends the request with key ("" sends no Authorization header).
func as(key string) reqOption {
	return func(r *http.Request) {
		if key == "" {
			r.Header.Del("Authorization")
		} else {
			r.Header.Set("Authorization", "Bearer "+key)
		}
	}
}

// header sets a request header.
func header(k, v string) reqOption { return func(r *http.Request) { r.Header.Set(k, v) } }

// call sends one request as team-a. body is nil, a string, []byte or
// io.Reader (sent as is) or any other value (sent as JSON). Every response is checked
// against the OpenAPI document for its route and status.
func (e *env) call(method, path string, body any, opts ...reqOption) result {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	for _, o := range opts {
		o(req)
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	res := result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	conform(e.t, method, req.URL.Path, res)
	return res
}

// conform checks a response body against the document: the schema of its
// route and status when the document lists one, FastAPI's {"detail": str}
// for the error statuses it leaves out.
func conform(t testing.TB, method, path string, res result) {
	t.Helper()
	if res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s %s: Content-Type = %q, want application/json", method, path, res.Header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(res.Body, &v); err != nil {
		t.Errorf("%s %s -> %d: body is not JSON: %v\n%s", method, path, res.Status, err, res.Body)
		return
	}
	d := loadDoc(t)
	sch, ok := d.responseSchema(method, path, res.Status)
	switch {
	case ok:
	case res.Status == http.StatusUnprocessableEntity:
		sch = json.RawMessage(`{"$ref":"#/components/schemas/HTTPValidationError"}`)
	case res.Status >= 400 && path != "/v1/system-check":
		sch = detailSchema
	default:
		return
	}
	for _, msg := range d.check(sch, v, "$") {
		t.Errorf("%s %s -> %d does not match the document: %s\nbody: %s", method, path, res.Status, msg, res.Body)
	}
	if res.Status == http.StatusUnprocessableEntity {
		// FastAPI with pydantic v2 always sends the input, even null.
		for _, item := range v.(map[string]any)["detail"].([]any) {
			if _, ok := item.(map[string]any)["input"]; !ok {
				t.Errorf("%s %s: validation error without input: %v", method, path, item)
			}
		}
	}
}

// mustStatus fails the test unless res has the wanted status.
func mustStatus(t testing.TB, res result, want int) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status = %d, want %d; body %s", res.Status, want, res.Body)
	}
}

// createModel creates a model of team-a through the API and returns its id.
func (e *env) createModel(name string) string {
	e.t.Helper()
	res := e.call("POST", "/v1/preview/models", map[string]any{
		"entity": nil, "project": "proj", "name": name, "base_model": testBaseModels[1], "return_existing": false,
	})
	mustStatus(e.t, res, http.StatusOK)
	return res.JSON(e.t)["id"].(string)
}

// addCheckpoint records a checkpoint at step with its objects in S3, the
// way the training activities do (objects first, then the row).
func (e *env) addCheckpoint(modelID string, step int, metrics map[string]float64) *trainyard.Checkpoint {
	e.t.Helper()
	ctx := context.Background()
	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.AdapterConfigFile} {
		data := []byte("checkpoint " + name)
		if err := e.blobs.PutCheckpointFile(ctx, modelID, step, name, bytes.NewReader(data), int64(len(data))); err != nil {
			e.t.Fatalf("put checkpoint file: %v", err)
		}
	}
	cp := &trainyard.Checkpoint{ModelID: modelID, Step: step, Metrics: metrics}
	if err := e.db.CreateCheckpoint(ctx, cp); err != nil {
		e.t.Fatalf("create checkpoint: %v", err)
	}
	return cp
}

// hasCheckpointFiles reports whether the weights of a checkpoint are in S3.
func (e *env) hasCheckpointFiles(modelID string, step int) bool {
	e.t.Helper()
	rc, err := e.blobs.GetCheckpointFile(context.Background(), modelID, step, trainyard.AdapterWeightsFile)
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		return false
	}
	if err != nil {
		e.t.Fatalf("get checkpoint file: %v", err)
	}
	rc.Close()
	return true
}

// locs returns the loc of each validation error, JSON-encoded, for compact
// comparisons.
func locs(t testing.TB, errs []map[string]any) []string {
	t.Helper()
	out := make([]string, len(errs))
	for i, e := range errs {
		b, _ := json.Marshal(e["loc"])
		out[i] = string(b) + " " + e["type"].(string)
	}
	return out
}

// stringField matches a zap string field in observed logs.
func stringField(key, val string) zap.Field { return zap.String(key, val) }
