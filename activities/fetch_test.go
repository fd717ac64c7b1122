package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/storage/s3"
)

// dripServer serves /data whole, /big as twice the data and /drip one byte
// every 50 ms, forever.
func dripServer(t *testing.T, data []byte) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(data); w.Write(data) })
	mux.HandleFunc("/drip", func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestFetchStoresTheDataForPrepare: Fetch copies the data in once; Prepare
// trains on the stored copy without downloading again, and a repeated
// Fetch finds it stored.
func TestFetchStoresTheDataForPrepare(t *testing.T) {
	t.Parallel()
	data := sftData(4)
	var downloads atomic.Int32 // counted by the server's goroutines
	mux := http.NewServeMux()
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) { downloads.Add(1); w.Write(data) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f := newFixture(t, Config{}, nil)
	job := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: srv.URL + "/data"}, nil)

	var res FetchResult
	must(t, f.run(t, f.acts.Fetch, FetchInput{JobID: job.ID}, &res))
	if res.Bytes != int64(len(data)) || res.AlreadyStored {
		t.Fatalf("Fetch = %+v, want %d bytes", res, len(data))
	}
	must(t, f.run(t, f.acts.Fetch, FetchInput{JobID: job.ID}, &res))
	if !res.AlreadyStored {
		t.Fatalf("second Fetch = %+v, want AlreadyStored", res)
	}
	var prep PrepareResult
	must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, &prep))
	if downloads.Load() != 1 || prep.NumExamples != 4 {
		t.Fatalf("%d downloads, prepared %+v", downloads.Load(), prep)
	}
	// An RL job has nothing to fetch.
	rl := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, []byte(`{}`))
	must(t, f.run(t, f.acts.Fetch, FetchInput{JobID: rl.ID}, &res))
}

// TestFetchHasATotalDeadline: a server that keeps sending a byte now and
// then never trips the stall timer, but the attempt ends at its deadline
// with a retryable error that says so.
func TestFetchHasATotalDeadline(t *testing.T) {
	t.Parallel()
	srv := dripServer(t, nil)
	f := newFixture(t, Config{DownloadTimeout: 400 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond}, nil)
	job := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: srv.URL + "/drip"}, nil)
	start := time.Now()
	err := f.run(t, f.acts.Fetch, FetchInput{JobID: job.ID}, nil)
	var appErr *temporal.ApplicationError
	switch {
	case err == nil || !strings.Contains(err.Error(), "did not finish downloading within 400ms"):
		t.Fatalf("err = %v, want the download deadline", err)
	case errorsAs(err, &appErr) && appErr.NonRetryable():
		t.Fatalf("err = %v, want it retryable", err)
	case time.Since(start) > 5*time.Second:
		t.Fatalf("the attempt took %v", time.Since(start))
	}
}

// TestFetchSharesDownloadsBetweenAccounts: an account past its share of the
// worker's downloads is told to retry later (without holding a slot), while
// another account's download goes ahead; the data limit holds for a copy
// that is streamed, not buffered.
func TestFetchSharesDownloadsBetweenAccounts(t *testing.T) {
	t.Parallel()
	data := sftData(2)
	srv := dripServer(t, data)
	f := newFixture(t, Config{FetchPerAccount: 1, MaxDataBytes: int64(len(data))}, nil)
	// The account holds its one download (as a worker's running Fetch would).
	release, ok := f.acts.fetches.acquire(f.acct.ID)
	if !ok {
		t.Fatal("the first download slot was refused")
	}
	second := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: srv.URL + "/data"}, nil)
	err := f.run(t, f.acts.Fetch, FetchInput{JobID: second.ID}, nil)
	var appErr *temporal.ApplicationError
	if !errorsAs(err, &appErr) || appErr.Type() != ErrFetchBusy || appErr.NonRetryable() || appErr.NextRetryDelay() <= 0 {
		t.Fatalf("same account past its share: err = %v, want a retryable %s with a retry delay", err, ErrFetchBusy)
	}

	other, err := f.db.CreateAccount(context.Background(), "other-"+uuid.NewString()[:8])
	must(t, err)
	m := &trainyard.Model{AccountID: other.ID, Entity: other.Entity, Project: "p", Name: "m", BaseModel: testBaseName}
	must(t, f.db.CreateModel(context.Background(), m))
	cfg, _ := json.Marshal(jobspec.JobConfig{TrainingDataURL: srv.URL + "/data"})
	job, _, err := f.db.CreateJob(context.Background(), &trainyard.Job{ID: uuid.Must(uuid.NewV7()).String(),
		AccountID: other.ID, ModelID: m.ID, Kind: trainyard.JobKindSFT, Config: cfg})
	must(t, err)
	var res FetchResult
	must(t, f.run(t, f.acts.Fetch, FetchInput{JobID: job.ID}, &res))
	if res.Bytes != int64(len(data)) {
		t.Fatalf("other account's fetch = %+v", res)
	}
	rc, err := f.blobs.GetJobInput(context.Background(), job.ID, jobspec.DataFile)
	must(t, err)
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != string(data) {
		t.Fatalf("stored copy differs from the data")
	}
	release()

	big := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: srv.URL + "/big"}, nil)
	err = f.run(t, f.acts.Fetch, FetchInput{JobID: big.ID}, nil)
	if !errorsAs(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(appErr.Message(), "larger than the limit") {
		t.Fatalf("data past the limit: err = %v", err)
	}
}

// TestFetchOutagesAreNotTheUsers: a data server that refuses connections
// fails the job after a few attempts, but the platform's own object store
// refusing them (while an upload is read or the copy stored) is an outage,
// retried however many attempts it takes and however long past the retry
// window, under a message without its address.
func TestFetchOutagesAreNotTheUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there now
	f := newFixture(t, Config{}, nil)
	const window = 5 * time.Minute
	now := time.Now()
	_, err := f.acts.download(ctx, closed.URL+"/data.jsonl")
	var appErr *temporal.ApplicationError
	if final := fetchError(ctx, err, fetchUserErrorAttempts, now, window); !errorsAs(final, &appErr) || !appErr.NonRetryable() ||
		!strings.Contains(appErr.Message(), "refused the connection") {
		t.Fatalf("a refusing data server after %d attempts: %v", fetchUserErrorAttempts, final)
	}

	unresolved := dataServerFailure(fmt.Errorf("download training data: %w", &net.DNSError{Err: "no such host", Name: "data.invalid", IsNotFound: true}))
	if final := fetchError(ctx, unresolved, fetchUserErrorAttempts, now, window); !errorsAs(final, &appErr) || !appErr.NonRetryable() ||
		!strings.Contains(appErr.Message(), "does not resolve") {
		t.Fatalf("a data server name that does not resolve, after %d attempts: %v", fetchUserErrorAttempts, final)
	}
	if early := fetchError(ctx, unresolved, fetchUserErrorAttempts-1, now, window); errorsAs(early, &appErr) && appErr.NonRetryable() {
		t.Fatalf("a name that does not resolve is final after %d attempts: %v", fetchUserErrorAttempts-1, early)
	}

	down, err := s3.New(ctx, s3.Config{Endpoint: closed.URL, Bucket: "trainyard", AccessKeyID: "k", SecretAccessKey: "s", UsePathStyle: true})
	must(t, err)
	_, err = down.GetFile(ctx, f.acct.ID, "artifacts/p/n/v0/data.jsonl")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("the stopped object store: %v, want a refused connection", err)
	}
	retried := fetchError(ctx, classify(err, "open artifact"), 100, now.Add(-10*window), window)
	if !errorsAs(retried, &appErr) || appErr.NonRetryable() || appErr.Type() != ErrInfrastructure {
		t.Fatalf("the object store refusing after 100 attempts and 10 windows: %v, want a retryable %s error", retried, ErrInfrastructure)
	}
	if host := strings.TrimPrefix(closed.URL, "http://"); strings.Contains(appErr.Message(), host) {
		t.Fatalf("message %q names the object store's address", appErr.Message())
	}
}
