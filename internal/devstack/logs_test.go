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
