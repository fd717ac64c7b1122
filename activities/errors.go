package activities

import (
	"context"
	"errors"
	"fmt"

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
		return temporal.NewNonRetryableApplicationError(what+": "+trainyard.ErrorMessage(err), ErrGone, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// isCode reports whether err carries the trainyard error code.
func isCode(err error, code string) bool {
	return err != nil && trainyard.ErrorCode(err) == code
}
