package activities

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"
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
