package devstack

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestGatedLoggerStopping: the server's logs keep their errors, a context's
// cancellation among them, until the server is stopping; then an error that
// is (or wraps) context.Canceled is dropped and any other still passes.
func TestGatedLoggerStopping(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l, _, stopping := gatedLogger(zap.New(core))
	canceled := fmt.Errorf("refresh: %w", context.Canceled)
	l.Error("before", zap.Error(canceled))
	stopping.Store(true)
	l.Error("canceled", zap.Error(context.Canceled))
	l.Error("wrapped", zap.Error(canceled))
	l.With(zap.String("service", "frontend")).Error("derived", zap.Error(canceled))
	l.Error("other", zap.Error(errors.New("disk full")))
	l.Warn("chatter")
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message)
	}
	if fmt.Sprint(got) != "[before other chatter]" {
		t.Errorf("logged %v, want [before other chatter]", got)
	}
}

// TestGatedLoggerDemotes: an error the server logs for no fault of the service
// (demotedErrors) arrives as a warning, with its fields; other errors stay
// errors.
func TestGatedLoggerDemotes(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l, _, _ := gatedLogger(zap.New(core))
	l.Error("unable to add metrics baggage to gRPC trailer", zap.Error(errors.New("transport: SendHeader called multiple times")))
	l.Error("other", zap.Error(errors.New("disk full")))
	var got []string
	for _, e := range logs.All() {
		got = append(got, fmt.Sprintf("%s %s %d", e.Level, e.Message, len(e.Context)))
	}
	want := "[warn unable to add metrics baggage to gRPC trailer 1 error other 1]"
	if fmt.Sprint(got) != want {
		t.Errorf("logged %v, want %s", got, want)
	}
}
