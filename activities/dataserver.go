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
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/temporal"
)

// ErrDataServer types the retryable error of a Fetch attempt whose
// training_data_url failed in a way that may pass (a 503, a timeout, no
// route): retried with backoff until Config.DownloadRetryWindow is used up.
const ErrDataServer = "DataServerUnavailable"

// dataServerError is a failure of the server a training_data_url names, as
// opposed to a failure of the platform's own dependencies (the object store
// holding an upload, the database): only the first can be the user's
// mistake, and only the first is bounded by the retry window. It is
// classified once, where it happens (dataServerFailure).
type dataServerError struct {
	// msg says what went wrong for the user who submitted the job: it
	// names the kind of failure, never an address (the cause, with the URL
	// and the address dialed, stays in err for operators).
	msg string
	// permanent failures cannot pass by retrying (an answer that is not
	// HTTP, TLS to a plain server, a 404): they fail the job at once.
	permanent bool
	// quick failures (the host refuses connections or its name does not
	// resolve) end the job after fetchUserErrorAttempts attempts, sooner
	// than the window: nobody is serving there.
	quick bool
	err   error
}

func (e *dataServerError) Error() string { return e.msg }
func (e *dataServerError) Unwrap() error { return e.err }

// httpStatusError is an answer of the data server other than 200 OK.
type httpStatusError int

func (e httpStatusError) Error() string { return fmt.Sprintf("HTTP %d", int(e)) }

// stallError ends a download that received nothing for its window.
type stallError struct{ window time.Duration }

func (e *stallError) Error() string {
	return fmt.Sprintf("training_data_url sent nothing for %s", e.window)
}

// dataServerFailure classifies err, a failure to download from the data
// server: permanent (fail the job now), quick (fail after a few attempts)
// or transient (retry within the window). Anything not recognised is
// transient: the window bounds it all the same.
func dataServerFailure(err error) *dataServerError {
	perm := func(msg string) *dataServerError { return &dataServerError{msg: msg, permanent: true, err: err} }
	transient := func(msg string) *dataServerError { return &dataServerError{msg: msg, err: err} }
	var (
		status   httpStatusError
		stall    *stallError
		dnsErr   *net.DNSError
		record   tls.RecordHeaderError
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		netErr   net.Error
	)
	switch {
	case dialRefused(err):
		return perm(ErrRefusedAddress.Error())
	case errors.As(err, &status):
		msg := fmt.Sprintf("training_data_url answered HTTP %d", int(status))
		if status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout {
			return transient(msg)
		}
		return perm(msg)
	case errors.As(err, &stall):
		return transient(stall.Error())
	case errors.Is(err, http.ErrSchemeMismatch):
		return perm("training_data_url: the server speaks plain HTTP, not HTTPS (use an http:// URL)")
	case errors.As(err, &record):
		return perm("training_data_url: the server does not speak TLS (HTTPS)")
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return perm("training_data_url: the server's TLS certificate is not valid for it")
	case errors.As(err, &alert):
		return perm("training_data_url: the TLS handshake with the server failed")
	case strings.Contains(err.Error(), "malformed HTTP"):
		// net/http reports an answer it cannot parse in a string only.
		return perm("training_data_url: the server's answer is not HTTP")
	case errors.Is(err, syscall.ECONNREFUSED):
		return &dataServerError{msg: "training_data_url: the host refused the connection", quick: true, err: err}
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return &dataServerError{msg: "training_data_url: the host name does not resolve", quick: true, err: err}
	case errors.As(err, &dnsErr):
		return transient("training_data_url: the host name could not be looked up")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return transient("training_data_url: there is no route to the host")
	case errors.As(err, &netErr) && netErr.Timeout():
		return transient("training_data_url: the server did not answer in time")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return transient("training_data_url: the server closed the connection")
	}
	return transient("training_data_url: the download failed")
}

// fetchError decides what a failed Fetch attempt returns. A data server's
// permanent failures were made final where they happened (copyIn); its
// other failures are retried with backoff, the quick ones for
// fetchUserErrorAttempts attempts, the rest while the next attempt would
// still start within window of since, the start of the job's first
// download attempt; then they fail the job. Failures of the platform's own
// object store (reading an upload, storing the copy), and a cancelled
// attempt, come back as they are: an outage never fails a job.
func fetchError(ctx context.Context, err error, attempt int32, since time.Time, window time.Duration) error {
	var ds *dataServerError
	if ctx.Err() != nil || !errors.As(err, &ds) || ds.permanent {
		return err
	}
	delay := retryDelay(attempt)
	elapsed := time.Since(since)
	switch {
	case ds.quick && attempt >= fetchUserErrorAttempts:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s (%d attempts)", ds.msg, attempt), ErrInvalidInput, ds.err)
	case elapsed+delay > window:
		attempts := fmt.Sprintf("%d attempts", attempt)
		if attempt == 1 {
			attempts = "1 attempt"
		}
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s (%s over %s)", ds.msg, attempts, elapsed.Round(time.Second)), ErrInvalidInput, ds.err)
	}
	// The message is the job's last_error; the cause, with the URL and the
	// address dialed, stays in Temporal for operators.
	msg := fmt.Sprintf("%s; retrying for up to %s", ds.msg, window)
	if ds.quick {
		msg = fmt.Sprintf("%s; retrying, %d attempts at most", ds.msg, fetchUserErrorAttempts)
	}
	return temporal.NewApplicationErrorWithOptions(msg, ErrDataServer,
		temporal.ApplicationErrorOptions{NextRetryDelay: delay, Cause: ds.err})
}

// fetchUserErrorAttempts is how many attempts a refused or unresolvable
// URL gets before its job fails.
const fetchUserErrorAttempts = 3

// retryDelay is the wait after a data server's failure on attempt (1 s,
// doubling, at most a minute, as the fetch's retry policy would): set on the
// error, so the window check knows when the next attempt starts.
func retryDelay(attempt int32) time.Duration {
	if attempt < 1 || attempt > 7 {
		return time.Minute
	}
	return min(time.Second<<(attempt-1), time.Minute)
}
