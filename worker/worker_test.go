package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLoggerKeepsKeyValuesAsFields(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := NewLogger(zap.New(core)).With("Namespace", "default")
	l.Info("activity started", "ActivityType", "Train", "Attempt", 2)
	l.Warn("slow")
	l.Error("failed", "Error", "boom")
	l.Debug("detail")
	entries := logs.All()
	if len(entries) != 4 {
		t.Fatalf("%d entries", len(entries))
	}
	f := entries[0].ContextMap()
	if entries[0].Message != "activity started" || f["ActivityType"] != "Train" || f["Attempt"] != int64(2) || f["Namespace"] != "default" {
		t.Fatalf("entry = %+v %v", entries[0], f)
	}
	if entries[1].Level != zapcore.WarnLevel || entries[2].Level != zapcore.ErrorLevel || entries[3].Level != zapcore.DebugLevel {
		t.Fatalf("levels = %v %v %v", entries[1].Level, entries[2].Level, entries[3].Level)
	}
}

func TestLoggerDowngradesCancellations(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := NewLogger(zap.New(core))
	l.Error("Activity error.", "ActivityType", "Train", "Error", fmt.Errorf("stop: %w", context.Canceled))
	l.Warn("RecordActivityHeartbeat with error", "Error", temporal.NewCanceledError())
	// A heartbeat whose context was cancelled under it (TestPauseAndResume, once: a job paused as it waited
	// its turn).
	l.Warn("RecordActivityHeartbeat with error", "Error", serviceerror.NewCanceled("context canceled"))
	l.Error("Activity error.", "Error", errors.New("boom"))
	got := []zapcore.Level{}
	for _, e := range logs.All() {
		got = append(got, e.Level)
	}
	want := []zapcore.Level{zapcore.InfoLevel, zapcore.DebugLevel, zapcore.DebugLevel, zapcore.ErrorLevel}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("levels %v, want %v", got, want)
	}
}
