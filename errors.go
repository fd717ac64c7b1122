package trainyard

import (
	"errors"
	"fmt"
)

// Error codes. Each maps to one HTTP status in the api package; storage and
// activities classify failures with them so callers never inspect driver
// errors.
const (
	ECONFLICT     = "conflict"     // the resource already exists or is busy (409)
	EINTERNAL     = "internal"     // a bug or an infrastructure failure (500, text not shown)
	EINVALID      = "invalid"      // the request is well-formed but not acceptable (422)
	ENOTFOUND     = "not_found"    // missing, or owned by another account (404)
	EUNAUTHORIZED = "unauthorized" // no or bad credentials (401)
	ETOOLARGE     = "too_large"    // the body or an input exceeds a configured limit (413)
	ELIMIT        = "rate_limited" // a concurrency or rate limit was hit (429)
	EUNAVAILABLE  = "unavailable"  // a dependency is down; retrying later may work (503)
	EBADREQUEST   = "bad_request"  // the request cannot be served as asked, e.g. context overflow (400)
	ETIMEOUT      = "timeout"      // the client sent its request too slowly (408)
)

// Error is the application error. Message is safe to show to API clients;
// Err (optional) is the underlying cause, kept for logs and errors.Is/As.
type Error struct {
	Code    string
	Message string
	Err     error
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("trainyard error: code=%s message=%s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("trainyard error: code=%s message=%s", e.Code, e.Message)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted client-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError builds an *Error that keeps err as its cause.
func WrapError(code string, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of the first *Error in err's
// chain, or a generic text for any other error so internals never leak.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
