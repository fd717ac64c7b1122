package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

// How a job's workflow ends when the job does not complete: closed as
// FAILED or CANCELLED by the Fail activity, or, for a job already closed
// before this run, the way the job ended.

// closedOutcomeVersion marks workflows that end as their already closed
// job did; before it, such a run always completed.
const closedOutcomeVersion = "end-as-the-job-did"

// errAlreadyClosed wraps the outcome of a job that was closed before this
// run: it is the workflow's result, not a failure to record.
type errAlreadyClosed struct{ err error }

func (e errAlreadyClosed) Error() string { return e.err.Error() }
func (e errAlreadyClosed) Unwrap() error { return e.err }

// endAsClosed ends a run of an already closed job (a reset of a finished
// workflow) the way the job ended, so the Temporal UI agrees with the API:
// completed, failed with the job's error, or cancelled.
func (j *job) endAsClosed(ctx workflow.Context, turn activities.WaitTurnResult) (*JobResult, error) {
	j.progress.Status, j.progress.Error = turn.Status, turn.Error
	j.setStatus(ctx, turn.Status)
	if workflow.GetVersion(ctx, closedOutcomeVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return &JobResult{JobID: j.id}, nil
	}
	switch turn.Status {
	case trainyard.JobFailed:
		return nil, errAlreadyClosed{temporal.NewNonRetryableApplicationError(turn.Error, "JobFailed", nil)}
	case trainyard.JobCancelled:
		// A workflow ends as Canceled only once cancellation was asked
		// for; WaitTurn asked (a workflow cannot cancel itself).
		if turn.CancelRequested {
			_ = workflow.Await(ctx, func() bool { return ctx.Err() != nil })
		}
		return nil, errAlreadyClosed{temporal.NewCanceledError(turn.Error)}
	}
	return &JobResult{JobID: j.id}, nil
}

// fail closes the job after err: training_failed and FAILED, or CANCELLED
// when the workflow was cancelled. It runs in a disconnected context so a
// cancelled workflow can still write its final state.
func (j *job) fail(ctx workflow.Context, err error) {
	status, msg := trainyard.JobFailed, failureMessage(err)
	if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		status, msg = trainyard.JobCancelled, "cancelled"
	}
	j.progress.Status, j.progress.Phase, j.progress.Error = status, PhaseDone, msg
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	fopts := recordOptions()
	fopts.Summary = "close the job as " + string(status)
	ferr := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, fopts), a.Fail, activities.FailInput{
		JobID: j.id, Status: status, Message: msg,
	}).Get(dctx, nil)
	if ferr != nil {
		workflow.GetLogger(ctx).Error("could not record the job's failure", "JobID", j.id, "Error", ferr)
	}
	j.setStatus(dctx, status)
	j.retain(dctx)
}

// failureMessage is the user-facing text of why a job failed: the message of
// the activity's application error (written for users), or the kind of
// timeout.
func failureMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return fmt.Sprintf("a training activity timed out (%s)", timeoutErr.TimeoutType())
	}
	return err.Error()
}
