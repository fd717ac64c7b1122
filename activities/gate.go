package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// WaitTurn blocks until the job is the oldest unfinished job of its model,
// so jobs on one model run one at a time, in creation order, and never fork
// the step counter. While it waits it heartbeats (a cancelled job stops
// waiting at once) and repairs the job ahead of it when that job's workflow
// is gone: a workflow closed without closing its job (terminated or timed
// out from the Temporal UI/CLI) gets its job finalised, and a QUEUED job
// whose workflow was never started (Temporal was down when it was
// submitted) gets started.
//
// It returns the model's latest checkpoint step at the moment the job got
// its turn, which is where the job starts from.
func (a *Activities) WaitTurn(ctx context.Context, in WaitTurnInput) (*WaitTurnResult, error) {
	job, err := a.d.Jobs.GetJob(ctx, in.JobID)
	if err != nil {
		return nil, classify(err, "load job")
	}
	if job.Status.Terminal() {
		return a.finished(ctx, job)
	}
	log := a.d.Logger.With(zap.String("job_id", job.ID), zap.String("model_id", job.ModelID))
	waitingFor := ""
	for {
		head, err := a.d.Queue.OldestUnfinishedJob(ctx, job.ModelID)
		switch {
		case isCode(err, trainyard.ENOTFOUND):
			// Our own row turned terminal meanwhile (cancelled while
			// waiting, via the API's reconcile).
			if job, err = a.d.Jobs.GetJob(ctx, in.JobID); err != nil {
				return nil, classify(err, "load job")
			}
			return a.finished(ctx, job)
		case err != nil:
			return nil, classify(err, "look up the model's job queue")
		case head.ID == job.ID:
			return a.turn(ctx, job)
		}
		if head.ID != waitingFor {
			log.Info("job waits for an older job on the model", zap.String("waiting_for", head.ID))
			waitingFor = head.ID
		}
		if err := a.unblock(ctx, head); err != nil {
			log.Warn("could not check the job ahead", zap.String("waiting_for", head.ID), zap.Error(err))
		}
		activity.RecordHeartbeat(ctx, heartbeat{Waiting: head.ID})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(a.cfg.PollInterval):
		}
	}
}

// finished answers WaitTurn for a job that is already closed: a workflow
// run after the end (a reset from the Temporal UI) trains nothing and ends
// as the job did; the job's run id follows the current run.
func (a *Activities) finished(ctx context.Context, job *trainyard.Job) (*WaitTurnResult, error) {
	runID := activity.GetInfo(ctx).WorkflowExecution.RunID
	if err := a.d.Jobs.UpdateJob(ctx, job.ID, trainyard.JobUpdate{RunID: &runID}); err != nil {
		return nil, classify(err, "record the job's run")
	}
	res := &WaitTurnResult{Finished: true, Status: job.Status}
	if job.Error != nil {
		res.Error = *job.Error
	}
	if job.Status == trainyard.JobCancelled && a.d.Workflows != nil {
		// Only a run asked to cancel can end as Canceled.
		if err := a.d.Workflows.CancelRun(ctx, job.ID, runID); err != nil {
			return nil, classify(err, "ask the run to cancel")
		}
		res.CancelRequested = true
	}
	return res, nil
}

// turn reads the step the job starts from.
func (a *Activities) turn(ctx context.Context, job *trainyard.Job) (*WaitTurnResult, error) {
	latest, err := a.d.Models.LatestCheckpoint(ctx, job.ModelID)
	switch {
	case isCode(err, trainyard.ENOTFOUND):
		return &WaitTurnResult{BaseStep: 0}, nil
	case err != nil:
		return nil, classify(err, "read the model's latest checkpoint")
	}
	return &WaitTurnResult{BaseStep: latest.Step}, nil
}

// unblock repairs the job ahead when its workflow cannot finish it.
func (a *Activities) unblock(ctx context.Context, head *trainyard.Job) error {
	if a.d.Workflows == nil {
		return nil
	}
	st, err := a.d.Workflows.DescribeJob(ctx, head.ID)
	if err != nil {
		return fmt.Errorf("describe workflow of job %s: %w", head.ID, err)
	}
	switch {
	case st.Running:
		return nil
	case !st.Exists:
		if head.Status != trainyard.JobQueued || time.Since(head.CreatedAt) < a.cfg.StartGrace {
			return nil
		}
		a.d.Logger.Info("starting the workflow of a queued job that has none", zap.String("job_id", head.ID))
		return a.d.Workflows.StartJob(ctx, head)
	default:
		status, msg := ClosedWorkflowOutcome(st.Status)
		a.d.Logger.Warn("finalising a job whose workflow closed without finishing it",
			zap.String("job_id", head.ID), zap.String("workflow_status", st.Status))
		return CloseAbandoned(ctx, a.d.Events, a.d.Blobs, head.ID, status, msg)
	}
}

// ClosedWorkflowOutcome maps the status of a workflow that closed without
// closing its job to the job's terminal status and error message. An
// operator's cancel or terminate is a cancellation; anything else a failure.
func ClosedWorkflowOutcome(workflowStatus string) (trainyard.JobStatus, string) {
	switch workflowStatus {
	case "Canceled":
		return trainyard.JobCancelled, "cancelled"
	case "Terminated":
		return trainyard.JobCancelled, "cancelled: the job's workflow was terminated"
	case "TimedOut":
		return trainyard.JobFailed, "the job's workflow timed out"
	case "Failed":
		return trainyard.JobFailed, "the job's workflow failed"
	default:
		return trainyard.JobFailed, fmt.Sprintf("the job's workflow ended (%s) without finishing the job", workflowStatus)
	}
}
