package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trainyard/trainyard/workflows"
)

// envRecord makes the tests write the histories of their workflows to
// workflows/testdata, where the replay tests check that today's workflow
// code still replays them (deterministically).
const envRecord = "TRAINYARD_RECORD_HISTORIES"

// recordHistory writes every run of the job's workflow, oldest first, as
// testdata/<name>.json (<name>_run<N>.json when it continued as new).
func recordHistory(t *testing.T, s *stack, jobID, name string) {
	t.Helper()
	if os.Getenv(envRecord) == "" {
		return
	}
	ctx := context.Background()
	var runs []*historypb.History
	runID := ""
	for {
		h := &historypb.History{}
		it := s.tc.GetWorkflowHistory(ctx, workflows.WorkflowID(jobID), runID, false, 0)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			h.Events = append(h.Events, ev)
		}
		runs = append([]*historypb.History{h}, runs...)
		prev := h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			break
		}
		runID = prev
	}
	for i, h := range runs {
		file := name + ".json"
		if len(runs) > 1 {
			file = name + "_run" + string(rune('1'+i)) + ".json"
		}
		js, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "..", "workflows", "testdata", file)
		if err := os.WriteFile(path, js, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s (%d events)", path, len(h.Events))
	}
}
