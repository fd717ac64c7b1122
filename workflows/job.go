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

	started   time.Time     // the job's first run's start; its deadline counts from here
	pausedFor time.Duration // time spent PAUSED, which the deadline does not count
	baseStep  int
	total     int
	done      int
	metrics   map[string]float64
	progress  Progress
	ctl       control

	// routed is set when the run routes compute by base model
	// (routeVersion): Prepare and Train go to base's task queue, and Train
	// chunks to sticky, the own queue of the worker holding the job's state,
	// while it has one.
	routed bool
	base   string
	sticky string
	// prev is the last step spread over workers: its shards' workers
	// catch up from it (parallel.go).
	prev *activities.PreviousStep
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
		j.ctl.pauses, j.pausedFor = r.Pauses, r.PausedFor
		j.base, j.sticky = r.BaseModel, r.WorkerQueue
		j.progress.Status, j.progress.Phase = trainyard.JobRunning, PhaseTraining
		j.progress.CurrentStep, j.progress.TotalSteps, j.progress.Metrics = r.Done, r.TotalSteps, r.Metrics
	}
	err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (Progress, error) {
		p := j.progress
		p.Phase = j.phase()
		return p, nil
	})
	if err != nil {
		return err
	}
	return j.setupControl(ctx)
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
		if err := j.place(ctx); err != nil {
			return nil, err
		}
		j.progress.Phase = PhasePreparing

		var prep activities.PrepareResult
		remaining, err := j.remaining(ctx)
		if err != nil {
			return nil, err
		}
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, prepareOptions(j.opts, j.computeQueue(ctx), remaining)),
			a.Prepare, activities.PrepareInput{JobID: j.id, Kind: j.kind, BaseStep: j.baseStep}).Get(ctx, &prep)
		if err != nil {
			return nil, err
		}
		if j.routed {
			j.sticky = prep.WorkerQueue
		}
		j.total = prep.TotalSteps
		j.progress.Status, j.progress.Phase, j.progress.TotalSteps = trainyard.JobRunning, PhaseTraining, j.total
		j.setStatus(ctx, trainyard.JobRunning)
		log.Info("job prepared", "JobID", j.id, "BaseStep", j.baseStep, "TotalSteps", j.total)
	} else if err := j.place(ctx); err != nil {
		return nil, err
	}

	for runs := 0; j.done < j.total; runs++ {
		if j.ctl.pause != pauseNone {
			if err := j.pauseHere(ctx); err != nil {
				return nil, err
			}
		}
		if runs > 0 && (runs >= j.opts.TrainActivitiesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			return nil, j.continueAsNew(ctx)
		}
		remaining, err := j.remaining(ctx)
		if err != nil {
			return nil, err
		}
		r, err := j.advance(ctx, activities.TrainInput{
			JobID: j.id, BaseStep: j.baseStep, Done: j.done, TotalSteps: j.total, EventOffset: j.ctl.eventOffset(),
		}, remaining)
		if err != nil {
			return nil, err
		}
		if r.Done == j.done && r.Paused {
			continue // asked to pause before its first step: the state at j.done is the one it loaded
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
	// A pause accepted during the last step has nothing left to pause; its
	// handler finishes before the job does.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}

	j.progress.Phase = PhaseSaving
	step := j.baseStep + 1
	copts := recordOptions()
	copts.Summary = fmt.Sprintf("record checkpoint %d", step)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, copts), a.Complete, activities.CompleteInput{
		JobID: j.id, CheckpointStep: step, TotalSteps: j.total, Metrics: j.metrics, EventOffset: j.ctl.eventOffset(),
	}).Get(ctx, nil)
	if err != nil {
		return nil, err
	}
	j.progress.Status, j.progress.Phase, j.progress.CheckpointStep = trainyard.JobCompleted, PhaseDone, step
	j.setStatus(ctx, trainyard.JobCompleted)
	log.Info("job completed", "JobID", j.id, "CheckpointStep", step)
	j.retain(ctx)
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

// remaining is the time left before the job's deadline; an error, which
// fails the job, once it has passed.
func (j *job) remaining(ctx workflow.Context) (time.Duration, error) {
	left := j.started.Add(j.opts.Deadline + j.pausedFor).Sub(workflow.Now(ctx))
	if left <= 0 {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the job did not finish within its deadline of %s", j.opts.Deadline), "DeadlineExceeded", nil)
	}
	return left, nil
}

// computeQueue is the task queue of this job's CPU-bound activities: the
// queue of the workers holding its base model once routed, else the shared
// compute queue (runs from before routeVersion).
func (j *job) computeQueue(ctx workflow.Context) string {
	if j.routed && j.base != "" {
		return BaseTaskQueue(workflow.GetInfo(ctx).TaskQueueName, j.base)
	}
	return ComputeTaskQueue(workflow.GetInfo(ctx).TaskQueueName)
}

// continueAsNew hands the job's progress to a fresh run of the workflow, so
// the history of a long SFT job stays small. It waits for update handlers
// still running (a pause being recorded) so none is cut off.
func (j *job) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	workflow.GetLogger(ctx).Info("continuing as new", "JobID", j.id, "Done", j.done, "TotalSteps", j.total)
	return workflow.NewContinueAsNewError(ctx, SFTJob, SFTJobInput{
		JobID:   j.id,
		Options: j.opts,
		Resume: &Resume{StartedAt: j.started, BaseStep: j.baseStep, TotalSteps: j.total, Done: j.done, Metrics: j.metrics,
			Pauses: j.ctl.pauses, PausedFor: j.pausedFor, BaseModel: j.base, WorkerQueue: j.sticky},
	})
}
