package activities

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// TestPrepareGivesUpOnAStalledDownload: an http(s) training_data_url that
// stops sending fails the Prepare attempt after the stall timeout, as a
// retryable error, instead of holding the worker's compute slot for the
// activity's whole start-to-close timeout. A slow download that keeps
// sending is not a stall, and HTTP errors keep their classification.
func TestPrepareGivesUpOnAStalledDownload(t *testing.T) {
	t.Parallel()
	const stall = 300 * time.Millisecond
	data := sftData(4)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/silent", func(w http.ResponseWriter, r *http.Request) {
		select { // accepts the request and never answers
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/half", func(w http.ResponseWriter, r *http.Request) {
		w.Write(data[:10])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		for _, line := range bytes.SplitAfter(bytes.TrimSpace(data), []byte("\n")) { // 4 lines over 2 stall windows
			w.Write(line)
			w.(http.Flusher).Flush()
			time.Sleep(stall / 2)
		}
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close, which waits for handlers

	f := newFixture(t, Config{DownloadStallTimeout: stall, HeartbeatInterval: 100 * time.Millisecond}, nil)
	prepare := func(path string) (time.Duration, error) {
		job := f.newJob(t, f.newModel(t), trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: srv.URL + path}, nil)
		start := time.Now()
		err := f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, nil)
		return time.Since(start), err
	}
	for _, path := range []string{"/silent", "/half"} {
		took, err := prepare(path)
		var appErr *temporal.ApplicationError
		switch {
		case err == nil:
			t.Fatalf("%s: Prepare succeeded", path)
		case errorsAs(err, &appErr) && appErr.NonRetryable():
			t.Fatalf("%s: err = %v, want a retryable error", path, err)
		case !strings.Contains(err.Error(), "sent nothing for"):
			t.Fatalf("%s: err = %v, want it to name the stall", path, err)
		case took > 10*stall:
			t.Fatalf("%s: Prepare took %v with a stall timeout of %v", path, took, stall)
		}
	}
	if took, err := prepare("/slow"); err != nil {
		t.Fatalf("/slow (%v): %v", took, err)
	}
	_, err := prepare("/missing")
	var appErr *temporal.ApplicationError
	if !errorsAs(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(appErr.Message(), "HTTP 404") {
		t.Fatalf("/missing: err = %v, want a non-retryable HTTP 404", err)
	}
	_, err = prepare("/busy")
	if err == nil || errorsAs(err, &appErr) && appErr.NonRetryable() || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("/busy: err = %v, want a retryable HTTP 503", err)
	}
}
