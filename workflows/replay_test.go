package workflows

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays the histories of real runs (recorded
// by internal/e2e with TRAINYARD_RECORD_HISTORIES=1) against today's
// workflow code: a change that would break running workflows (a different
// sequence of commands) fails here.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories in testdata (%v)", err)
	}
	logger := log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(RLJob, workflow.RegisterOptions{Name: "RLJob"})
			r.RegisterWorkflowWithOptions(SFTJob, workflow.RegisterOptions{Name: "SFTJob"})
			if err := r.ReplayWorkflowHistoryFromJSONFile(logger, f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
