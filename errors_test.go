package trainyard

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodeAndMessage(t *testing.T) {
	cause := errors.New("pq: duplicate key")
	wrapped := fmt.Errorf("create model: %w", WrapError(ECONFLICT, cause, "Model %q exists.", "m"))
	if got := ErrorCode(wrapped); got != ECONFLICT {
		t.Errorf("ErrorCode = %q, want %q", got, ECONFLICT)
	}
	if got := ErrorMessage(wrapped); got != `Model "m" exists.` {
		t.Errorf("ErrorMessage = %q", got)
	}
	if !errors.Is(wrapped, cause) {
		t.Error("the cause must stay reachable with errors.Is")
	}

	plain := errors.New("connection refused to 10.0.0.3")
	if ErrorCode(plain) != EINTERNAL {
		t.Errorf("a foreign error must be EINTERNAL, got %q", ErrorCode(plain))
	}
	if msg := ErrorMessage(plain); msg != "Internal error." {
		t.Errorf("a foreign error's text must not leak, got %q", msg)
	}
	if ErrorCode(nil) != "" || ErrorMessage(nil) != "" {
		t.Error("nil must have no code and no message")
	}
}

func TestJobStatusTerminal(t *testing.T) {
	for s, want := range map[JobStatus]bool{
		JobQueued: false, JobRunning: false, JobCompleted: true, JobFailed: true, JobCancelled: true,
	} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, !want, want)
		}
	}
}
