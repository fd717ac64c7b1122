package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
