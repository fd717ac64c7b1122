package examples_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// exchange is one request an example sent and the answer it got.
type exchange struct {
	Method, Path, Query string
	Status              int
	Body                []byte
}

// recorder is a reverse proxy in front of the API that keeps every answer,
// so the test can check what the examples actually received.
type recorder struct {
	URL string // base URL of the proxy
	mu  sync.Mutex
	log []exchange
}

func newRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		req := resp.Request
		r.mu.Lock()
		r.log = append(r.log, exchange{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery,
			Status: resp.StatusCode, Body: body})
		r.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// take returns the exchanges recorded since the last call.
func (r *recorder) take() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.log
	r.log = nil
	return out
}
