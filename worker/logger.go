package worker

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// Logger adapts a zap logger to the Temporal SDK's logger, so the SDK's own
// logs and workflow.GetLogger / activity.GetLogger output land in the same
// structured stream as the rest of trainyard. Pass it as client.Options.Logger.
type Logger struct {
	s *zap.SugaredLogger
}

var (
	_ log.Logger          = (*Logger)(nil)
	_ log.WithLogger      = (*Logger)(nil)
	_ log.WithSkipCallers = (*Logger)(nil)
)

// NewLogger wraps l. The caller skip points zap's caller field at the code
// that logged, not at this adapter.
func NewLogger(l *zap.Logger) *Logger {
	return &Logger{s: l.WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

// Debug logs at debug level; keyvals alternate keys and values.
func (l *Logger) Debug(msg string, keyvals ...any) { l.s.Debugw(msg, keyvals...) }

// Info logs at info level.
func (l *Logger) Info(msg string, keyvals ...any) { l.s.Infow(msg, keyvals...) }

// Warn logs at warn level, or at debug when it only reports a
// cancellation (see expected).
func (l *Logger) Warn(msg string, keyvals ...any) {
	if expected(keyvals) {
		l.s.Debugw(msg, keyvals...)
		return
	}
	l.s.Warnw(msg, keyvals...)
}

// Error logs at error level, or at info when it only reports a
// cancellation (see expected).
func (l *Logger) Error(msg string, keyvals ...any) {
	if expected(keyvals) {
		l.s.Infow(msg, keyvals...)
		return
	}
	l.s.Errorw(msg, keyvals...)
}

// expected reports whether a log entry's error is the cancellation of an
// activity or workflow: the SDK logs an activity that stops because its job
// was cancelled as "Activity error." and a heartbeat that learns of it as a
// warning, but a cancel is normal operation, not something to page about. A
// heartbeat sent as its activity's context is cancelled (a job paused while
// it waits its turn) fails with the frontend's Canceled status.
func expected(keyvals []any) bool {
	for i := 1; i < len(keyvals); i += 2 {
		if err, ok := keyvals[i].(error); ok {
			var canceled *serviceerror.Canceled
			return errors.Is(err, context.Canceled) || temporal.IsCanceledError(err) || errors.As(err, &canceled)
		}
	}
	return false
}

// With returns a logger that adds keyvals to every entry.
func (l *Logger) With(keyvals ...any) log.Logger { return &Logger{s: l.s.With(keyvals...)} }

// WithCallerSkip returns a logger that skips depth more stack frames.
func (l *Logger) WithCallerSkip(depth int) log.Logger {
	return &Logger{s: l.s.WithOptions(zap.AddCallerSkip(depth))}
}
