package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/workflows"
)

// resetToFirstTrain resets the job's workflow to the workflow task that
// scheduled its first Train activity (just after Prepare), as an operator
// would from the Temporal UI, and returns the new run's id.
func (s *stack) resetToFirstTrain(jobID string) string {
	s.t.Helper()
	ctx := context.Background()
	it := s.tc.GetWorkflowHistory(ctx, workflows.WorkflowID(jobID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var point int64
	for it.HasNext() && point == 0 {
		ev, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Train" {
			point = ev.GetEventId() - 1 // the WorkflowTaskCompleted that scheduled it
		}
	}
	if point == 0 {
		s.t.Fatal("no Train activity in the history")
	}
	st := temporalServer(s.t)
	resp, err := s.tc.WorkflowService().ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 st.Namespace(),
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: workflows.WorkflowID(jobID)},
		Reason:                    "e2e reset",
		WorkflowTaskFinishEventId: point,
		RequestId:                 uuid.NewString(),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.GetRunId()
}

// TestResetFromTemporal resets job workflows from the Temporal side: a
// running job re-trains from the reset point and completes with the same
// gap-free events and one checkpoint; a completed job stays completed.
func TestResetFromTemporal(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{ChunkDuration: 300 * time.Millisecond, SaveInterval: 100 * time.Millisecond}})
	s.startWorker()
	model := s.createModel("reset")
	id := s.longSFT(model, 12, 1)
	s.waitEvents(id, 4, time.Minute)
	run := s.resetToFirstTrain(id)
	job := s.waitJob(id, 2*time.Minute)
	if job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(1) || job["run_id"] != run {
		t.Fatalf("job after a reset while running = %v (new run %s)", job, run)
	}
	checkEvents(t, s.events(id), 12, "training_ended")
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1]" {
		t.Fatalf("checkpoints = %s", got)
	}

	// Resetting the finished job runs nothing again.
	before := s.events(id)
	s.resetToFirstTrain(id)
	s.waitWorkflowClosed(id, time.Minute)
	if job := s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil); job["status"] != "COMPLETED" {
		t.Fatalf("job after resetting it when finished = %v", job)
	}
	after := s.events(id)
	if len(after) != len(before) || after[len(after)-1].ID != before[len(before)-1].ID {
		t.Fatalf("events changed: %v -> %v", types(before), types(after))
	}
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1]" {
		t.Fatalf("checkpoints = %s", got)
	}
}
