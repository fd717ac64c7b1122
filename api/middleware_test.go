package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, header, detail string
	}{
		{"no header", "", "Not authenticated"},
		{"other scheme", "Basic dXNlcjpwYXNz", "Invalid authentication credentials"},
		{"empty bearer", "Bearer ", "Invalid authentication credentials"},
		{"unknown key", "Bearer ty_not-a-real-key", "invalid API key"},
	}
	for _, c := range cases {
		var opt reqOption = as("")
		if c.header != "" {
			opt = header("Authorization", c.header)
		}
		res := e.call("GET", "/v1/preview/models/"+uuid.NewString()+"/checkpoints", nil, opt)
		if res.Status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", c.name, res.Status)
			continue
		}
		if res.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s: WWW-Authenticate = %q", c.name, res.Header.Get("WWW-Authenticate"))
		}
		if got := res.JSON(t)["detail"]; got != c.detail {
			t.Errorf("%s: detail = %q, want %q", c.name, got, c.detail)
		}
	}
	// The scheme is case-insensitive, as in FastAPI's HTTPBearer.
	res := e.call("GET", "/v1/preview/models/"+uuid.NewString()+"/checkpoints", nil, header("Authorization", "bearer "+e.key))
	mustStatus(t, res, http.StatusNotFound)
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		method, path string
		status       int
		detail       string
	}{
		{"GET", "/v1/nope", 404, "Not Found"},
		{"GET", "/", 404, "Not Found"},
		{"POST", "/v1/preview/models/", 404, "Not Found"}, // no trailing-slash redirect
		{"PUT", "/v1/preview/models", 405, "Method Not Allowed"},
		{"PUT", "/v1/health", 405, "Method Not Allowed"},
	} {
		res := e.call(c.method, c.path, nil, as(""))
		if res.Status != c.status || res.JSON(t)["detail"] != c.detail {
			t.Errorf("%s %s = %d %s, want %d %q", c.method, c.path, res.Status, res.Body, c.status, c.detail)
		}
	}
}

func TestRequestIDIsEchoedOrMade(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.call("GET", "/v1/health", nil, header("X-Request-ID", "client-req.42"))
	if got := res.Header.Get("X-Request-ID"); got != "client-req.42" {
		t.Errorf("echoed id = %q", got)
	}
	for _, bad := range []string{"", "has space", strings.Repeat("a", 129), "line\tbreak"} {
		res := e.call("GET", "/v1/health", nil, header("X-Request-ID", bad))
		if _, err := uuid.Parse(res.Header.Get("X-Request-ID")); err != nil {
			t.Errorf("id for %q = %q, want a generated uuid", bad, res.Header.Get("X-Request-ID"))
		}
	}
}

func TestAccessLogLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createModel("logged")
	entries := e.logs.FilterMessage("request").FilterField(stringField("route", "/v1/preview/models")).All()
	if len(entries) != 1 {
		t.Fatalf("access log lines for the create = %d, want 1", len(entries))
	}
	f := entries[0].ContextMap()
	if f["status"] != int64(200) || f["method"] != "POST" || f["account"] != "team-a" || f["request_id"] == "" {
		t.Errorf("access log fields = %v", f)
	}
	if _, ok := f["latency"]; !ok {
		t.Error("access log has no latency")
	}
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.db.Close() // every query now fails inside pgx
	res := e.call("GET", "/v1/preview/models/"+uuid.NewString()+"/checkpoints", nil)
	mustStatus(t, res, http.StatusInternalServerError)
	if got := res.JSON(t)["detail"]; got != "Internal Server Error" {
		t.Errorf("detail = %q, want the generic message", got)
	}
	logged := e.logs.FilterMessage("internal error").All()
	if len(logged) != 1 || !strings.Contains(logged[0].ContextMap()["error"].(string), "closed") {
		t.Errorf("the cause was not logged: %v", logged)
	}
}
