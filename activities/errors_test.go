package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
)

// TestClassifyKeepsInfrastructureDetailsOut: a retried infrastructure error
// carries a message fit for the job's last_error and error fields (no host,
// user or database name), while the cause keeps the details for operators.
func TestClassifyKeepsInfrastructureDetailsOut(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	cause := fmt.Errorf("failed to connect to `user=trainyard database=prod host=10.1.2.3`: %w", refused)
	err := classify(cause, "record the step")
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NonRetryable() || appErr.Type() != ErrInfrastructure {
		t.Fatalf("classify = %v, want a retryable %s error", err, ErrInfrastructure)
	}
	if msg := appErr.Message(); strings.Contains(msg, "10.1.2.3") || strings.Contains(msg, "trainyard") || !strings.Contains(msg, "refused") {
		t.Fatalf("message %q", msg)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatal("the cause is lost")
	}
}

// TestClassifyOperationTimeouts: a database that stops answering fails an
// operation at its own deadline, so the error wraps
// context.DeadlineExceeded although the activity's context is alive. It is
// an outage like any other: retried, with a message that names the
// database and not its host, user or the driver's text.
func TestClassifyOperationTimeouts(t *testing.T) {
	cause := fmt.Errorf("the database did not answer in time: failed to connect to `user=trainyard database=prod`: "+
		"10.1.2.3:5432 (db.internal): dial error: %w", context.DeadlineExceeded)
	err := classify(trainyard.WrapError(trainyard.EUNAVAILABLE, cause, "job x: the database did not answer in time"), "record the step")
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NonRetryable() || appErr.Type() != ErrInfrastructure {
		t.Fatalf("classify = %v, want a retryable %s error", err, ErrInfrastructure)
	}
	if msg := appErr.Message(); msg != "record the step: job x: the database did not answer in time" {
		t.Fatalf("message %q", msg)
	}
	// The activity's own cancellation stays what it is.
	if err := classify(fmt.Errorf("job x: %w", context.Canceled), "record the step"); !errors.Is(err, context.Canceled) || errors.As(err, &appErr) {
		t.Fatalf("a cancellation became %v", err)
	}
}
