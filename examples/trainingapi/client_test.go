package trainingapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestRetriesTooManyRequests: a POST answered 429 is sent again after the answer's Retry-After, as OpenAI's
// clients do, and its eventual answer is returned; other client errors are not retried.
func TestRetriesTooManyRequests(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := calls.Add(1); {
		case r.URL.Path == "/v1/bad":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"detail":"no"}`))
		case n <= 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"detail":"Concurrency limit reached for requests"}`))
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	c := NewClient(srv.URL+"/v1", "key")
	var out struct{ OK bool }
	if err := c.Do(context.Background(), http.MethodPost, "/chat/completions", map[string]any{}, &out); err != nil || !out.OK {
		t.Fatalf("after two 429s: %v %+v", err, out)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}
	calls.Store(100)
	err := c.Do(context.Background(), http.MethodPost, "/bad", nil, nil)
	if apiErr, ok := err.(*APIError); !ok || apiErr.Status != http.StatusBadRequest || calls.Load() != 101 {
		t.Fatalf("400: %v after %d calls", err, calls.Load()-100)
	}
}
