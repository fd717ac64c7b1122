package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/workflows"
)

// resetToFirstTrain resets the job's workflow to the workflow task that
// scheduled its first Train activity (just after Prepare), as an operator
// would from the Temporal UI, and returns the new run's id.
func (s *stack) resetToFirstTrain(jobID string) string {
	s.t.Helper()
	var lastCompleted int64
	return s.resetTo(jobID, func(ev *historypb.HistoryEvent) bool {
		if ev.GetWorkflowTaskCompletedEventAttributes() != nil {
			lastCompleted = ev.GetEventId()
		}
		a := ev.GetActivityTaskScheduledEventAttributes()
		return a != nil && a.GetActivityType().GetName() == "Train"
	}, func(*historypb.HistoryEvent) int64 { return lastCompleted }) // the WorkflowTaskCompleted that scheduled it
}

// resetToStart resets the job's workflow to its first workflow task, the
// "reset to first workflow task" of the Temporal UI: everything runs again.
func (s *stack) resetToStart(jobID string) string {
	s.t.Helper()
	return s.resetTo(jobID, func(ev *historypb.HistoryEvent) bool {
		return ev.GetWorkflowTaskCompletedEventAttributes() != nil
	}, func(ev *historypb.HistoryEvent) int64 { return ev.GetEventId() })
}

// resetTo resets the job's workflow to the workflow task that point names
// for the first event match picks, and returns the new run's id.
func (s *stack) resetTo(jobID string, match func(*historypb.HistoryEvent) bool, point func(*historypb.HistoryEvent) int64) string {
	s.t.Helper()
	ctx := context.Background()
	it := s.tc.GetWorkflowHistory(ctx, workflows.WorkflowID(jobID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var at int64
	for it.HasNext() && at == 0 {
		ev, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		if match(ev) {
			at = point(ev)
		}
	}
	if at == 0 {
		s.t.Fatal("no reset point in the history")
	}
	st := temporalServer(s.t)
	resp, err := s.tc.WorkflowService().ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 st.Namespace(),
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: workflows.WorkflowID(jobID)},
		Reason:                    "e2e reset",
		WorkflowTaskFinishEventId: at,
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

	// Resetting the finished job runs nothing again, and Temporal agrees
	// with the job.
	before := s.events(id)
	again := s.resetToFirstTrain(id)
	if st := s.waitWorkflowClosed(id, time.Minute); st.Status != "Completed" || st.RunID != again {
		t.Fatalf("workflow after resetting the completed job: %+v (new run %s)", st, again)
	}
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

// TestResetToStartNeverGoesBack is issue 14's reset of a running job to its
// first workflow task: the new run prepares again, then resumes from the
// job's newest stored state. current_step never decreases, the events stay
// one gap-free sequence, the job ends with one checkpoint and names the new
// run.
func TestResetToStartNeverGoesBack(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{ChunkDuration: 300 * time.Millisecond, SaveInterval: 50 * time.Millisecond}})
	s.startWorker()
	model := s.createModel("reset-start")
	id := s.longSFT(model, 40, 5)
	s.waitEvents(id, 60, time.Minute)
	run := s.resetToStart(id)
	highest := 0.0
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		job := s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil)
		step := job["current_step"].(float64)
		if step < highest {
			t.Fatalf("current_step went from %v to %v after the reset", highest, step)
		}
		highest = step
		if job["status"] == "COMPLETED" {
			if job["run_id"] != run || job["checkpoint_step"] != float64(1) {
				t.Fatalf("job after the reset = %v (new run %s)", job, run)
			}
			break
		}
		if trainyard.JobStatus(job["status"].(string)).Terminal() || time.Now().After(deadline) {
			t.Fatalf("job = %v", job)
		}
	}
	checkEvents(t, s.events(id), 200, "training_ended")
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1]" {
		t.Fatalf("checkpoints = %s", got)
	}
}

// TestResetOfAClosedJobEndsAsTheJob: a reset of a cancelled or failed job's
// workflow runs nothing, and its new run ends as the job did (Canceled,
// Failed), with the job's run_id following it.
func TestResetOfAClosedJobEndsAsTheJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Activities: activities.Config{ChunkDuration: 300 * time.Millisecond}})
	s.startWorker()
	cancelled := s.longSFT(s.createModel("reset-cancelled"), 20, 20)
	s.waitEvents(cancelled, 3, time.Minute)
	s.mustCall("POST", "/v1/preview/training-jobs/"+cancelled+"/cancel", nil)
	s.waitJob(cancelled, time.Minute)
	s.waitWorkflowClosed(cancelled, time.Minute)

	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=toolong", tooLongJSONL())
	failed := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
		"model_id": s.createModel("reset-failed"), "training_data_url": up["url"]})["id"].(string)
	if job := s.waitJob(failed, time.Minute); job["status"] != "FAILED" {
		t.Fatalf("job = %v", job)
	}
	s.waitWorkflowClosed(failed, time.Minute)

	for id, want := range map[string]string{cancelled: "Canceled", failed: "Failed"} {
		before := s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil)
		run := s.resetToStart(id)
		if st := s.waitWorkflowClosed(id, time.Minute); st.Status != want || st.RunID != run {
			t.Fatalf("workflow of a %s job after a reset: %+v, want %s in run %s", before["status"], st, want, run)
		}
		after := s.mustCall("GET", "/v1/preview/training-jobs/"+id, nil)
		if after["status"] != before["status"] || after["error"] != before["error"] || after["run_id"] != run {
			t.Fatalf("job after a reset: %v, before: %v (new run %s)", after, before, run)
		}
	}
}
