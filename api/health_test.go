package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
)

func TestHealthNeedsNoKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.call("GET", "/v1/health", nil, as(""))
	mustStatus(t, res, http.StatusOK)
	if got := res.JSON(t)["status"]; got != "ok" {
		t.Errorf("status field = %v, want ok", got)
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, httptest.NewRequest("HEAD", "/v1/health", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("HEAD /v1/health = %d, want 200", rec.Code)
	}
}

func TestSystemCheckReportsEachComponent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.call("GET", "/v1/system-check", nil, as(""))
	mustStatus(t, res, http.StatusOK)
	body := res.JSON(t)
	if body["api"] != true {
		t.Errorf("api = %v, want true", body["api"])
	}
	for _, name := range []string{"database", "storage"} {
		c, ok := body[name].(map[string]any)
		if !ok {
			t.Fatalf("%s missing from %s", name, res.Body)
		}
		if c["success"] != true || c["error"] != nil {
			t.Errorf("%s = %v, want success without error", name, c)
		}
		if d, ok := c["duration"].(float64); !ok || d < 0 {
			t.Errorf("%s duration = %v, want milliseconds", name, c["duration"])
		}
	}
}

func TestSystemCheckFailureIs503(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	e := newEnv(t, func(cfg *api.Config, deps *api.Deps) {
		cfg.SystemCheckTimeout = 100 * time.Millisecond
		// Probes that answer at once, so a loaded machine cannot make the
		// healthy one miss the short deadline.
		deps.Checks = append([]api.HealthCheck{},
			api.HealthCheck{Name: "database", Check: func(context.Context) error { return nil }},
			api.HealthCheck{Name: "temporal", Check: func(context.Context) error {
				return errors.New("dial tcp 127.0.0.1:7233: connection refused")
			}},
			// A probe that ignores its deadline must not hold the answer.
			api.HealthCheck{Name: "queue:trainyard-gpu", Check: func(context.Context) error {
				<-release
				return nil
			}},
			api.HealthCheck{Name: "queue:trainyard-cpu", Check: func(context.Context) error {
				panic("probe bug")
			}},
			// A condition trainyard states itself, with no cause beneath,
			// reads as it is.
			api.HealthCheck{Name: "queue:trainyard-fetch", Check: func(context.Context) error {
				return trainyard.Errorf(trainyard.EUNAVAILABLE, "no worker is polling this task queue")
			}},
			api.HealthCheck{Name: "storage", Check: func(context.Context) error {
				return trainyard.WrapError(trainyard.EUNAVAILABLE, errors.New("dial tcp: connection refused"), "bucket b: object store unavailable")
			}},
		)
	})
	res := e.call("GET", "/v1/system-check", nil, as(""))
	mustStatus(t, res, http.StatusServiceUnavailable)
	body := res.JSON(t)
	wantErr := map[string]string{
		"temporal":              "temporal unavailable",
		"queue:trainyard-gpu":   "timed out after 100ms",
		"queue:trainyard-cpu":   "check panicked",
		"queue:trainyard-fetch": "no worker is polling this task queue",
		"storage":               "storage unavailable",
	}
	for name, want := range wantErr {
		c := body[name].(map[string]any)
		if c["success"] != false || c["error"] != want {
			t.Errorf("%s = %v, want failure %q", name, c, want)
		}
	}
	if db := body["database"].(map[string]any); db["success"] != true {
		t.Errorf("database = %v, want success", db)
	}
}

// TestSystemCheckHidesConnectionDetails: the system check needs no key, so
// a failing probe's error (a DSN, a user, a database name, a host, a port,
// an endpoint URL) stays out of the body and goes to the log, where the
// operator reads it.
func TestSystemCheckHidesConnectionDetails(t *testing.T) {
	t.Parallel()
	dbErr := trainyard.WrapError(trainyard.EUNAVAILABLE,
		errors.New("failed to connect to user=postgres database=trainyard_secret: 127.0.0.1:55439 (127.0.0.1): dial error: connection refused"),
		"ping database: database unavailable")
	s3Err := errors.New(`bucket trainyard-objects: operation error S3: HeadBucket, https response error StatusCode: 403, ` +
		`RequestID: 17A, HostID: dd9, api error Forbidden: https://minio.internal.example:9000/trainyard-objects`)
	e := newEnv(t, func(_ *api.Config, deps *api.Deps) {
		deps.Checks = []api.HealthCheck{
			{Name: "database", Check: func(context.Context) error { return dbErr }},
			{Name: "storage", Check: func(context.Context) error { return s3Err }},
			{Name: "temporal", Check: func(context.Context) error {
				return fmt.Errorf("temporal frontend: %w", errors.New("rpc error: dial tcp 10.0.3.7:7233: i/o timeout"))
			}},
			{Name: "inference", Check: func(context.Context) error {
				return fmt.Errorf("read the inference registry: %w", dbErr)
			}},
		}
	})
	res := e.call("GET", "/v1/system-check", nil, as(""))
	mustStatus(t, res, http.StatusServiceUnavailable)
	body := res.JSON(t)
	for name, want := range map[string]string{
		"database": "database unavailable", "storage": "storage unavailable",
		"temporal": "temporal unavailable", "inference": "inference unavailable",
	} {
		if c := body[name].(map[string]any); c["error"] != want {
			t.Errorf("%s error = %v, want %q", name, c["error"], want)
		}
	}
	secrets := []string{"postgres", "trainyard_secret", "55439", "127.0.0.1", "user=", "minio.internal", "9000",
		"trainyard-objects", "10.0.3.7", "7233", "HostID"}
	for _, secret := range secrets {
		if strings.Contains(string(res.Body), secret) {
			t.Errorf("the body shows %q: %s", secret, res.Body)
		}
	}
	var logged strings.Builder
	for _, entry := range e.logs.FilterMessage("system check failed").All() {
		for _, f := range entry.Context {
			if f.Key == "error" {
				logged.WriteString(f.Interface.(error).Error() + "\n")
			}
		}
	}
	for _, secret := range secrets {
		if !strings.Contains(logged.String(), secret) {
			t.Errorf("the log lacks %q, which the operator needs: %s", secret, logged.String())
		}
	}
}

// TestSystemCheckListsBaseModels: the base models a model may be created on (snapshots of the models
// directory included) are listed in the system check.
func TestSystemCheckListsBaseModels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(cfg *api.Config, _ *api.Deps) {
		cfg.BaseModels = []string{"Qwen/Qwen3-0.6B", "trainyard/tiny-chat"}
	})
	res := e.call("GET", "/v1/system-check", nil, as(""))
	mustStatus(t, res, http.StatusOK)
	got, _ := res.JSON(t)["base_models"].([]any)
	if len(got) != 2 || got[0] != "Qwen/Qwen3-0.6B" || got[1] != "trainyard/tiny-chat" {
		t.Fatalf("base_models = %v", res.JSON(t)["base_models"])
	}
}
