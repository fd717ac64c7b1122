package api_test

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/internal/telemetry"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

// TestMetrics: /metrics answers in the Prometheus text format, without a
// key, with the requests by route pattern (never a raw path), their
// latencies and the chat metrics.
func TestMetrics(t *testing.T) {
	e := newChatEnv(t, serving.Config{Concurrency: 1})
	mustStatus(t, e.call("GET", "/v1/preview/models/0190f5f0-0000-7000-8000-000000000000/checkpoints", nil), http.StatusNotFound)
	mustStatus(t, e.call("POST", "/v1/chat/completions", `{"model":"`+servingtest.BaseModel+`","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`), http.StatusOK)
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	for _, want := range []string{
		`trainyard_http_requests_total{method="GET",route="/v1/preview/models/:model_id/checkpoints",status="404"}`,
		`trainyard_http_request_duration_seconds_bucket{method="POST",route="/v1/chat/completions",le="+Inf"}`,
		`trainyard_chat_time_to_first_token_seconds_count`,
		`trainyard_chat_tokens_total{kind="completion"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "0190f5f0") {
		t.Error("/metrics carries a raw path")
	}
}

// TestMetricsLabelsBounded: requests with methods and paths of the client's
// choosing, without a key, add no series: a method outside the standard ones
// is "other" and a path no route matches is "unmatched".
func TestMetricsLabelsBounded(t *testing.T) {
	e := newEnv(t)
	h := e.srv.Handler()
	rng := rand.New(rand.NewPCG(1, 2))
	const tokenChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~"
	const pathChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
	random := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	flood := func(n int) {
		for range n {
			path := "/v1/health"
			switch rng.IntN(3) {
			case 1:
				path = "/v1/" + random(pathChars, 20)
			case 2:
				path = "/v1/preview/models/" + random(pathChars, 12) + "/checkpoints"
			}
			req := httptest.NewRequest("GET", path, nil)
			req.Method = random(tokenChars, 1+rng.IntN(32)) // any token is a valid HTTP method
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	flood(50) // every label combination a flood can reach
	before := httpSeries(t)
	flood(1000)
	if after := httpSeries(t); after != before {
		t.Fatalf("1,000 requests with random methods and paths took the request series from %d to %d", before, after)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body := rec.Body.String(); !strings.Contains(body, `method="other"`) || !strings.Contains(body, `route="unmatched"`) {
		t.Errorf("/metrics lacks the method=\"other\" and route=\"unmatched\" series of the flood")
	}
}

// httpSeries counts the series of the request metrics.
func httpSeries(t *testing.T) int {
	t.Helper()
	families, err := telemetry.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "trainyard_http_") {
			n += len(f.GetMetric())
		}
	}
	return n
}
