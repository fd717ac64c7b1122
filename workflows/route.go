package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard/activities"
)

// routeVersion marks runs that route compute by base model: a Place
// activity before Prepare, Prepare on the base model's task queue, Train
// chunks on the own queue of the worker holding the job's state. Histories
// from before it replay on the shared compute queue.
const routeVersion = "route-by-base-model"

// place decides, once per run, whether the run routes by base model, and
// if so learns the job's base model (unless carried over from the previous
// run), waiting while no live worker holds it.
func (j *job) place(ctx workflow.Context) error {
	if workflow.GetVersion(ctx, routeVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	j.routed = true
	if j.base != "" {
		return nil
	}
	var pl activities.PlaceResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, placeOptions()), a.Place,
		activities.PlaceInput{JobID: j.id}).Get(ctx, &pl)
	if err != nil {
		return err
	}
	j.base = pl.BaseModel
	return nil
}

// train runs one Train chunk: on the worker holding the job's state when
// there is one, else (or when that worker failed to run it) on any worker
// holding the base model, which resumes from the stored state.
func (j *job) train(ctx workflow.Context, in activities.TrainInput, remaining time.Duration) (*activities.TrainResult, error) {
	summary := fmt.Sprintf("gradient steps after %d of %d", j.done, j.total)
	var r activities.TrainResult
	if j.routed && j.sticky != "" {
		o := stickyTrainOptions(j.opts, j.sticky, remaining)
		o.Summary = summary + " (on the worker holding the job's state)"
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), a.Train, in).Get(ctx, &r)
		if err == nil {
			j.sticky = r.WorkerQueue
			j.progress.Workers = 1
			return &r, nil
		}
		if ctx.Err() != nil || !movable(err) {
			return nil, err
		}
		workflow.GetLogger(ctx).Warn("the worker holding the job's state did not run its chunk; another holder of the base model resumes from the stored state",
			"JobID", j.id, "WorkerQueue", j.sticky, "Error", err)
		j.sticky = ""
	}
	o := trainOptions(j.opts, j.computeQueue(ctx), remaining)
	o.Summary = summary
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), a.Train, in).Get(ctx, &r); err != nil {
		return nil, err
	}
	if j.routed {
		j.sticky = r.WorkerQueue
	}
	j.progress.Workers = 1
	return &r, nil
}

// movable reports whether a chunk that failed on its worker's own queue may
// run elsewhere: it timed out (the worker is gone) or failed in a way that
// is retried. Bad input, non-finite losses, a closed job and cancellation
// end the job as they would anywhere.
func movable(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return !appErr.NonRetryable()
	}
	var canceled *temporal.CanceledError
	return !errors.As(err, &canceled)
}
