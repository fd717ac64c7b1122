package postgres

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trainyard/trainyard"
)

// TestTranslateOutages: what a server that is shutting down, restarting or
// full says is EUNAVAILABLE (a 503 in the API), never a bare error that
// would be a 500; an operation's own deadline is EUNAVAILABLE, while a
// caller's cancellation stays a cancellation.
func TestTranslateOutages(t *testing.T) {
	for _, err := range []error{
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"},
		&pgconn.PgError{Code: "08006"},
		&pgconn.PgError{Code: "53300", Message: "too many connections"},
		io.ErrUnexpectedEOF,
		errors.Join(errOpTimeout, context.DeadlineExceeded),
	} {
		if code := trainyard.ErrorCode(translate(err, "job")); code != trainyard.EUNAVAILABLE {
			t.Errorf("%v: code %q, want %q", err, code, trainyard.EUNAVAILABLE)
		}
	}
	if err := translate(context.Canceled, "job"); !errors.Is(err, context.Canceled) || trainyard.ErrorCode(err) != trainyard.EINTERNAL {
		t.Errorf("a cancellation became %v", err)
	}
	if code := trainyard.ErrorCode(translate(&pgconn.PgError{Code: "42601"}, "job")); code != trainyard.EINTERNAL {
		t.Errorf("a syntax error became %q", code)
	}
}
