package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

// a names the activities; its methods are only used as references.
var a *activities.Activities

// RLJob runs one RL training job: the trajectory groups stored with the job
// become one gradient step from the model's latest checkpoint, recorded as
// the next checkpoint.
func RLJob(ctx workflow.Context, in RLJobInput) (*JobResult, error) {
	j := &job{id: in.JobID, kind: trainyard.JobKindRL, opts: in.Options.withDefaults()}
	if err := j.setup(ctx); err != nil {
		return nil, err
	}
	return j.run(ctx)
}

// SFTJob runs one SFT job: epochs of batches over the job's conversations,
// one gradient step per batch, recorded as the next checkpoint at the end.
// Long jobs continue as new with their progress in Resume.
func SFTJob(ctx workflow.Context, in SFTJobInput) (*JobResult, error) {
	j := &job{id: in.JobID, kind: trainyard.JobKindSFT, opts: in.Options.withDefaults(), resume: in.Resume}
	if err := j.setup(ctx); err != nil {
		return nil, err
	}
	return j.run(ctx)
}

// job is the state of one job workflow run.
type job struct {
	id     string
	kind   trainyard.JobKind
	opts   Options
	resume *Resume

	started  time.Time // the job's first run's start; its deadline counts from here
	baseStep int
	total    int
	done     int
	metrics  map[string]float64
	progress Progress
}

// setup restores carried-over progress and answers the progress query.
func (j *job) setup(ctx workflow.Context) error {
	j.progress = Progress{JobID: j.id, Status: trainyard.JobQueued, Phase: PhaseWaiting}
	j.started = workflow.GetInfo(ctx).WorkflowStartTime
	if r := j.resume; r != nil && !r.StartedAt.IsZero() {
		j.started = r.StartedAt
	}
	if r := j.resume; r != nil {
		j.baseStep, j.total, j.done, j.metrics = r.BaseStep, r.TotalSteps, r.Done, r.Metrics
		j.progress.Status, j.progress.Phase = trainyard.JobRunning, PhaseTraining
		j.progress.CurrentStep, j.progress.TotalSteps, j.progress.Metrics = r.Done, r.TotalSteps, r.Metrics
	}
	return workflow.SetQueryHandler(ctx, ProgressQuery, func() (Progress, error) { return j.progress, nil })
}

// run executes the phases and closes the job when they fail.
func (j *job) run(ctx workflow.Context) (*JobResult, error) {
	res, err := j.phases(ctx)
	if isGone(err) && ctx.Err() == nil && workflow.GetVersion(ctx, closedOutcomeVersion, workflow.DefaultVersion, 1) == 1 {
		// The job was closed under this run (a reset to a point before
		// the job's end, a terminate and restart): WaitTurn reports how
		// it ended, and the run ends the same way.
		var turn activities.WaitTurnResult
		werr := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, gateOptions(j.opts)),
			a.WaitTurn, activities.WaitTurnInput{JobID: j.id}).Get(ctx, &turn)
		if werr == nil && turn.Finished {
			res, err = j.endAsClosed(ctx, turn)
		}
	}
	var closed errAlreadyClosed
	switch {
	case err == nil || workflow.IsContinueAsNewError(err):
		return res, err
	case errors.As(err, &closed):
		return nil, closed.err
	}
	j.fail(ctx, err)
	return nil, err
}

// isGone reports whether an activity found the job closed or deleted.
func isGone(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrGone
}

func (j *job) phases(ctx workflow.Context) (*JobResult, error) {
	log := workflow.GetLogger(ctx)
	if j.resume == nil {
		if err := j.fetch(ctx); err != nil {
			return nil, err
		}
		var turn activities.WaitTurnResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, gateOptions(j.opts)),
			a.WaitTurn, activities.WaitTurnInput{JobID: j.id}).Get(ctx, &turn)
		if err != nil {
			return nil, err
		}
		if turn.Finished {
			log.Info("job was already finished; nothing to do", "JobID", j.id, "Status", turn.Status)
			j.progress.Phase = PhaseDone
			return j.endAsClosed(ctx, turn)
		}
		j.baseStep = turn.BaseStep
		j.progress.Phase = PhasePreparing

		var prep activities.PrepareResult
		remaining, err := j.remaining(ctx)
		if err != nil {
			return nil, err
		}
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, prepareOptions(j.opts, computeQueue(ctx), remaining)),
			a.Prepare, activities.PrepareInput{JobID: j.id, Kind: j.kind, BaseStep: j.baseStep}).Get(ctx, &prep)
		if err != nil {
			return nil, err
		}
		j.total = prep.TotalSteps
		j.progress.Status, j.progress.Phase, j.progress.TotalSteps = trainyard.JobRunning, PhaseTraining, j.total
		j.setStatus(ctx, trainyard.JobRunning)
		log.Info("job prepared", "JobID", j.id, "BaseStep", j.baseStep, "TotalSteps", j.total)
	}

	for runs := 0; j.done < j.total; runs++ {
		if runs > 0 && (runs >= j.opts.TrainActivitiesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			return nil, j.continueAsNew(ctx)
		}
		remaining, err := j.remaining(ctx)
		if err != nil {
			return nil, err
		}
		topts := trainOptions(j.opts, computeQueue(ctx), remaining)
		topts.Summary = fmt.Sprintf("gradient steps after %d of %d", j.done, j.total)
		trainCtx := workflow.WithActivityOptions(ctx, topts)
		var r activities.TrainResult
		err = workflow.ExecuteActivity(trainCtx, a.Train, activities.TrainInput{
			JobID: j.id, BaseStep: j.baseStep, Done: j.done, TotalSteps: j.total,
		}).Get(ctx, &r)
		if err != nil {
			return nil, err
		}
		if r.Done <= j.done || r.Done > j.total {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("internal error: a training activity reported %d of %d steps done after %d", r.Done, j.total, j.done),
				"BadProgress", nil)
		}
		j.done, j.metrics = r.Done, r.Metrics
		j.progress.CurrentStep, j.progress.Metrics = r.Done, r.Metrics
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("step %d of %d, loss %.4g", j.done, j.total, r.Metrics["loss"]))
	}

	j.progress.Phase = PhaseSaving
	step := j.baseStep + 1
	copts := recordOptions()
	copts.Summary = fmt.Sprintf("record checkpoint %d", step)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, copts), a.Complete, activities.CompleteInput{
		JobID: j.id, CheckpointStep: step, TotalSteps: j.total, Metrics: j.metrics,
	}).Get(ctx, nil)
	if err != nil {
		return nil, err
	}
	j.progress.Status, j.progress.Phase, j.progress.CheckpointStep = trainyard.JobCompleted, PhaseDone, step
	j.setStatus(ctx, trainyard.JobCompleted)
	log.Info("job completed", "JobID", j.id, "CheckpointStep", step)
	return &JobResult{JobID: j.id, CheckpointStep: step, Steps: j.total, Metrics: j.metrics}, nil
}

// fetchVersion marks workflows that copy SFT data in with Fetch before
// their turn; histories from before it replay without the activity.
const fetchVersion = "fetch-before-turn"

// fetch copies an SFT job's training data in, on the fetch task queue,
// before the job waits for its model: the download overlaps the wait and
// never holds a training slot.
func (j *job) fetch(ctx workflow.Context) error {
	if workflow.GetVersion(ctx, fetchVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion || j.kind != trainyard.JobKindSFT {
		return nil
	}
	j.progress.Phase = PhaseFetching
	queue := FetchTaskQueue(workflow.GetInfo(ctx).TaskQueueName)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, fetchOptions(j.opts, queue)),
		a.Fetch, activities.FetchInput{JobID: j.id}).Get(ctx, nil)
	j.progress.Phase = PhaseWaiting
	return err
}

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

// remaining is the time left before the job's deadline; an error, which
// fails the job, once it has passed.
func (j *job) remaining(ctx workflow.Context) (time.Duration, error) {
	left := j.started.Add(j.opts.Deadline).Sub(workflow.Now(ctx))
	if left <= 0 {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the job did not finish within its deadline of %s", j.opts.Deadline), "DeadlineExceeded", nil)
	}
	return left, nil
}

// computeQueue is the task queue of this workflow's CPU-bound activities.
func computeQueue(ctx workflow.Context) string {
	return ComputeTaskQueue(workflow.GetInfo(ctx).TaskQueueName)
}

// continueAsNew hands the job's progress to a fresh run of the workflow, so
// the history of a long SFT job stays small.
func (j *job) continueAsNew(ctx workflow.Context) error {
	workflow.GetLogger(ctx).Info("continuing as new", "JobID", j.id, "Done", j.done, "TotalSteps", j.total)
	return workflow.NewContinueAsNewError(ctx, SFTJob, SFTJobInput{
		JobID:   j.id,
		Options: j.opts,
		Resume:  &Resume{StartedAt: j.started, BaseStep: j.baseStep, TotalSteps: j.total, Done: j.done, Metrics: j.metrics},
	})
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
