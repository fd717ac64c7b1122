package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// Types of the non-retryable application errors the activities return. The
// workflow fails the job with the error's message, which is written for the
// user who submitted the job.
const (
	// ErrInvalidInput: the job's data or configuration cannot be trained on.
	ErrInvalidInput = "InvalidInput"
	// ErrNonFinite: a step produced a NaN or infinite loss or gradient.
	ErrNonFinite = "NonFiniteLoss"
	// ErrConflict: the model's checkpoints changed under the job (a
	// checkpoint it was about to write already belongs to another job).
	ErrConflict = "Conflict"
	// ErrGone: the job or its model was deleted while it ran.
	ErrGone = "Gone"
)

// gone is the final error of an activity whose job was closed or deleted
// under it (a cancel, a terminate from the Temporal UI, a deleted model).
// That is normal operation, not a fault: it is marked benign, so the SDK
// logs it at debug rather than as an activity error.
func gone(cause error, format string, args ...any) error {
	return temporal.NewApplicationErrorWithOptions(fmt.Sprintf(format, args...), ErrGone, temporal.ApplicationErrorOptions{
		NonRetryable: true, Cause: cause, Category: temporal.ApplicationErrorCategoryBenign})
}

// invalidf is a non-retryable bad-input error with a user-facing message.
func invalidf(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrInvalidInput, nil)
}

// classify turns an error from a store or the engine into what Temporal
// should do with it: bad input, non-finite losses and vanished rows are
// final; infrastructure failures (and anything unknown) are retried.
func classify(err error, what string) error {
	if err == nil {
		return nil
	}
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr):
		return err
	case isCode(err, trainyard.EUNAVAILABLE):
		// Checked before the context errors: a store's own deadline (a
		// database that stopped answering) wraps DeadlineExceeded while
		// the activity's context is alive, and must be retried as the
		// outage it is, under a message without the driver's details.
		return retried(err, what)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, engine.ErrNonFinite):
		return temporal.NewNonRetryableApplicationError(
			what+": the loss or gradient is not finite (NaN or infinity); lower the learning rate or check the data",
			ErrNonFinite, err)
	case errors.Is(err, engine.ErrInvalidInput), errors.Is(err, engine.ErrContextOverflow):
		return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), ErrInvalidInput, err)
	}
	switch trainyard.ErrorCode(err) {
	case trainyard.EINVALID:
		return temporal.NewNonRetryableApplicationError(what+": "+trainyard.ErrorMessage(err), ErrInvalidInput, err)
	case trainyard.ENOTFOUND:
		return gone(err, "%s: %s", what, trainyard.ErrorMessage(err))
	}
	return retried(err, what)
}

// retried is a retryable infrastructure error. Its message is what a job's
// last_error and, should the retries run out, its error show the user; the
// cause, with whatever hosts or SQL a driver put in it, stays with the
// failure in Temporal for operators.
func retried(err error, what string) error {
	return temporal.NewApplicationErrorWithCause(what+": "+publicReason(err), ErrInfrastructure, err)
}

// ErrInfrastructure types the retryable errors of the platform's own
// dependencies (database, object store, Temporal).
const ErrInfrastructure = "Infrastructure"

// publicReason says what went wrong without the details that are not the
// user's business: trainyard errors carry client-safe messages; network
// failures are named by kind.
func publicReason(err error) string {
	var te *trainyard.Error
	var ne net.Error
	switch {
	case errors.As(err, &te):
		return te.Message
	case errors.Is(err, syscall.ECONNREFUSED):
		return "a service refused the connection; retrying"
	case errors.As(err, &ne) && ne.Timeout():
		return "a service did not answer in time; retrying"
	case errors.As(err, &ne):
		return "a network error; retrying"
	}
	return "a temporary failure; retrying"
}

// isCode reports whether err carries the trainyard error code.
func isCode(err error, code string) bool {
	return err != nil && trainyard.ErrorCode(err) == code
}
