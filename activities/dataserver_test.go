package activities

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// rawServer listens on loopback and answers whatever a connection sends
// first with reply (nothing, for a server that just hangs up, as PostgreSQL
// does to an HTTP request), then ends the connection; it returns host:port.
func rawServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				c.Read(make([]byte, 64<<10)) // the request, or a TLS ClientHello
				c.Write([]byte(reply))
				// Half-close, then read until the client hangs up: closing
				// with its bytes unread would reset the connection, and the
				// client would see the reset instead of the answer.
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// runFetch runs Fetch on job once, as attempt 1 with the heartbeat details
// of earlier attempts (when given), and returns its error and the first
// heartbeat it recorded.
func (f *fixture) runFetch(t *testing.T, jobID string, details *fetchHeartbeat) (first fetchHeartbeat, err error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	env.SetTestTimeout(time.Minute)
	if details != nil {
		env.SetHeartbeatDetails(*details)
	}
	var mu sync.Mutex
	beats := 0
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		if beats++; beats == 1 {
			must(t, d.Get(&first))
		}
	})
	_, err = env.ExecuteActivity(f.acts.Fetch, FetchInput{JobID: jobID})
	mu.Lock()
	defer mu.Unlock()
	return first, err
}

// TestFetchFailsAtOnceOnWhatRetryingCannotFix: a training_data_url whose
// server answers with something that is not HTTP, or that is https:// to a
// server without TLS, fails its job on the first attempt (nothing about it
// will change by retrying), with a message that names the problem and not
// the address.
func TestFetchFailsAtOnceOnWhatRetryingCannotFix(t *testing.T) {
	t.Parallel()
	garbage := rawServer(t, "SSH-2.0-OpenSSH_9.6\r\n")
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	f := newFixture(t, Config{DownloadRetryWindow: time.Hour}, nil)
	for _, c := range []struct{ url, want string }{
		{"http://" + garbage + "/train.jsonl", "the server's answer is not HTTP"},
		{"https://" + strings.TrimPrefix(plain.URL, "http://") + "/train.jsonl", "speaks plain HTTP, not HTTPS"},
		{"https://" + garbage + "/train.jsonl", "does not speak TLS"},
	} {
		job := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: c.url}, nil)
		_, err := f.runFetch(t, job.ID, nil)
		var appErr *temporal.ApplicationError
		switch {
		case !errorsAs(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != ErrInvalidInput:
			t.Errorf("%s: err = %v, want a non-retryable %s on the first attempt", c.url, err, ErrInvalidInput)
		case !strings.Contains(appErr.Message(), c.want) || strings.Contains(appErr.Message(), "127.0.0.1"):
			t.Errorf("%s: message %q, want %q and no address", c.url, appErr.Message(), c.want)
		}
	}
}

// noRoute is a fetch client whose every dial fails as a dial to a host with
// no route does (nothing is sent anywhere).
func noRoute(errno syscall.Errno) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
			tcp, err := net.ResolveTCPAddr(network, addr)
			if err != nil {
				return nil, err
			}
			return nil, &net.OpError{Op: "dial", Net: network, Addr: tcp, Err: os.NewSyscallError("connect", errno)}
		},
	}}
}

// TestFetchBoundsRetriesOfAFailingDataServer: a data server that fails in a
// way that may pass (no route to it, a connection closed without an answer,
// a 503) is retried with backoff, the job's last_error saying why from the
// first failed attempt, but only while the next attempt would start within
// the retry window of the first: then the job fails, saying why. The window
// counts from the first attempt, which the heartbeat details carry to the
// next ones.
func TestFetchBoundsRetriesOfAFailingDataServer(t *testing.T) {
	t.Parallel()
	const window = time.Minute
	hangUp := rawServer(t, "")
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	f := newFixture(t, Config{DownloadRetryWindow: window}, nil)
	unroutable := newFixture(t, Config{DownloadRetryWindow: window}, nil)
	unroutable.acts.d.HTTP = noRoute(syscall.EHOSTUNREACH)
	for _, c := range []struct {
		f         *fixture
		url, want string
	}{
		{unroutable, "http://127.0.0.1:9/train.jsonl", "no route to the host"},
		{f, "http://" + hangUp + "/train.jsonl", "closed the connection"},
		{f, busy.URL + "/train.jsonl", "answered HTTP 503"},
	} {
		job := c.f.newJob(t, c.f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: c.url}, nil)
		start := time.Now()
		hb, err := c.f.runFetch(t, job.ID, nil)
		var appErr *temporal.ApplicationError
		switch {
		case !errorsAs(err, &appErr) || appErr.NonRetryable() || appErr.Type() != ErrDataServer || appErr.NextRetryDelay() != time.Second:
			t.Fatalf("%s, first attempt: err = %v, want a retryable %s after 1 s", c.url, err, ErrDataServer)
		case !strings.Contains(appErr.Message(), c.want) || !strings.Contains(appErr.Message(), "retrying") ||
			strings.Contains(appErr.Message(), "127.0.0.1"):
			t.Fatalf("%s, first attempt: last_error %q, want %q, retrying, and no address", c.url, appErr.Message(), c.want)
		case hb.DownloadSince.Before(start) || hb.DownloadSince.After(time.Now()):
			t.Fatalf("%s, first attempt: heartbeat %+v, want the attempt's start", c.url, hb)
		}

		// A later attempt within the window retries, and keeps counting
		// from the first attempt.
		earlier := fetchHeartbeat{DownloadSince: time.Now().Add(-window / 2).Round(0)}
		hb, err = c.f.runFetch(t, job.ID, &earlier)
		if !errorsAs(err, &appErr) || appErr.NonRetryable() || !hb.DownloadSince.Equal(earlier.DownloadSince) {
			t.Fatalf("%s, within the window: err = %v, heartbeat %+v, want a retry counted from %v", c.url, err, hb, earlier.DownloadSince)
		}

		// Past the window, the job fails, saying why.
		first := fetchHeartbeat{DownloadSince: time.Now().Add(-window)}
		_, err = c.f.runFetch(t, job.ID, &first)
		if !errorsAs(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != ErrInvalidInput ||
			!strings.Contains(appErr.Message(), c.want) || strings.Contains(appErr.Message(), "127.0.0.1") {
			t.Fatalf("%s, past the window: err = %v, want a non-retryable %s naming %q", c.url, err, ErrInvalidInput, c.want)
		}
	}
}

// TestDataServerFailuresAreClassifiedOnce: every failure of a data server,
// as net/http returns it, is permanent, quick or transient, and its message
// names the kind of failure, never the address.
func TestDataServerFailuresAreClassifiedOnce(t *testing.T) {
	t.Parallel()
	const host = "10.1.2.3"
	dial := func(err error) error {
		return &url.Error{Op: "Get", URL: "http://" + host + ":8080/train.jsonl", Err: &net.OpError{Op: "dial", Net: "tcp",
			Addr: &net.TCPAddr{IP: net.ParseIP(host), Port: 8080}, Err: err}}
	}
	get := func(err error) error { return &url.Error{Op: "Get", URL: "https://" + host + "/train.jsonl", Err: err} }
	const (
		permanent = iota
		quick
		transient
	)
	for _, c := range []struct {
		err  error
		kind int
		want string
	}{
		{dial(fmt.Errorf("%w (%s)", ErrRefusedAddress, host)), permanent, "does not fetch from"},
		{httpStatusError(404), permanent, "HTTP 404"},
		{httpStatusError(401), permanent, "HTTP 401"},
		{get(fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", errors.New(`malformed HTTP response "\x00\x00"`))), permanent, "not HTTP"},
		{get(http.ErrSchemeMismatch), permanent, "plain HTTP, not HTTPS"},
		{get(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), permanent, "does not speak TLS"},
		{get(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), permanent, "certificate is not valid"},
		{get(x509.HostnameError{Certificate: &x509.Certificate{}, Host: host}), permanent, "certificate is not valid"},
		{dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), quick, "refused the connection"},
		{dial(&net.DNSError{Err: "no such host", Name: "data.invalid", IsNotFound: true}), quick, "does not resolve"},
		{dial(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), transient, "no route to the host"},
		{dial(os.NewSyscallError("connect", syscall.ENETUNREACH)), transient, "no route to the host"},
		{dial(&net.DNSError{Err: "server misbehaving", Name: "data.example", IsTemporary: true}), transient, "could not be looked up"},
		{dial(&timeoutErr{}), transient, "did not answer in time"},
		{get(io.EOF), transient, "closed the connection"},
		{get(os.NewSyscallError("read", syscall.ECONNRESET)), transient, "closed the connection"},
		{httpStatusError(503), transient, "HTTP 503"},
		{httpStatusError(429), transient, "HTTP 429"},
		{httpStatusError(408), transient, "HTTP 408"},
		{&stallError{window: time.Minute}, transient, "sent nothing for 1m0s"},
		{get(errors.New("something new")), transient, "the download failed"},
	} {
		ds := dataServerFailure(c.err)
		kind := transient
		if ds.permanent {
			kind = permanent
		} else if ds.quick {
			kind = quick
		}
		if kind != c.kind || !strings.Contains(ds.msg, c.want) || strings.Contains(ds.msg, host) || !errors.Is(ds, c.err) {
			t.Errorf("%v: %q (kind %d), want %q (kind %d) without the address", c.err, ds.msg, kind, c.want, c.kind)
		}
	}
}

// timeoutErr is a network timeout.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestDownloadRetryWindowUnderDefaults: with the default settings, a data
// server that keeps failing ends its job within the retry window plus one
// attempt, whether each attempt fails at once (a closed connection, an
// unreachable network), after a few seconds (no route, found by ARP) or at
// the dialer's 30 s timeout (a host that drops packets). The schedule is
// computed from fetchError's own decisions, attempt by attempt.
func TestDownloadRetryWindowUnderDefaults(t *testing.T) {
	t.Parallel()
	var cfg Config
	cfg.applyDefaults()
	window := cfg.DownloadRetryWindow
	if window != 5*time.Minute {
		t.Fatalf("default window %v", window)
	}
	ds := dataServerFailure(os.NewSyscallError("connect", syscall.EHOSTUNREACH))
	for _, each := range []time.Duration{0, 3 * time.Second, 30 * time.Second} {
		var elapsed time.Duration // since the first attempt started
		for attempt := int32(1); ; attempt++ {
			elapsed += each
			err := fetchError(context.Background(), ds, attempt, time.Now().Add(-elapsed), window)
			var appErr *temporal.ApplicationError
			if !errorsAs(err, &appErr) {
				t.Fatalf("attempt %d: %v", attempt, err)
			}
			if appErr.NonRetryable() {
				if elapsed > window+each || elapsed < window-time.Minute-each {
					t.Fatalf("attempts of %v: the job failed %v after the first, want within %v + one attempt", each, elapsed, window)
				}
				t.Logf("attempts failing after %v: the job fails after attempt %d, %v after the first: %s", each, attempt, elapsed.Round(time.Second), appErr.Message())
				break
			}
			elapsed += appErr.NextRetryDelay()
		}
	}
}
