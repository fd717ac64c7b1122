package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard/activities"
)

// dataParallelVersion marks runs that may spread a step over several
// workers (Options.MaxWorkers > 1). Histories from before it replay with
// Train chunks only.
const dataParallelVersion = "data-parallel-steps"

// advance runs the job's next steps: one step spread over the live workers
// holding the base model when the job may use several and more than one
// does, else a Train chunk on one worker. The workers are looked up before
// every spread step, so one that joins takes shards from the next step on
// and one that left gets none.
func (j *job) advance(ctx workflow.Context, in activities.TrainInput, remaining time.Duration) (*activities.TrainResult, error) {
	if j.routed && j.opts.MaxWorkers > 1 && workflow.GetVersion(ctx, dataParallelVersion, workflow.DefaultVersion, 1) == 1 {
		var h activities.HoldersResult
		o := placeOptions()
		o.Summary = "find the workers a step can be spread over"
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), a.Holders,
			activities.HoldersInput{BaseModel: j.base, Max: j.opts.MaxWorkers}).Get(ctx, &h)
		if err != nil {
			return nil, err
		}
		if len(h.WorkerIDs) > 1 {
			return j.parallelStep(ctx, in, h.WorkerIDs, remaining)
		}
	}
	return j.train(ctx, in, remaining)
}

// parallelStep runs the step after in.Done as one Gradient activity per
// worker, each on that worker's own queue (the one keeping the job's state
// first: it applies the step), then ApplyStep. A shard or update whose
// worker is gone runs on any holder of the base model instead. If the
// update finds a shard's gradient missing, the step's shards run again.
func (j *job) parallelStep(ctx workflow.Context, in activities.TrainInput, workerIDs []string, remaining time.Duration) (*activities.TrainResult, error) {
	tq := workflow.GetInfo(ctx).TaskQueueName
	queues := make([]string, len(workerIDs))
	for i, id := range workerIDs {
		queues[i] = WorkerTaskQueue(tq, id)
	}
	if i := slices.Index(queues, j.sticky); i > 0 {
		queues[0], queues[i] = queues[i], queues[0]
	}
	K := len(queues)
	for attempt := 1; ; attempt++ {
		shards, err := j.shards(ctx, in, queues, remaining)
		if err != nil {
			return nil, err
		}
		var r activities.TrainResult
		err = j.onWorker(ctx, queues[0], fmt.Sprintf("apply step %d (%d shards)", in.Done+1, K), remaining, a.ApplyStep,
			activities.ApplyInput{JobID: in.JobID, BaseStep: in.BaseStep, Done: in.Done, TotalSteps: in.TotalSteps,
				EventOffset: in.EventOffset, Shards: shards}, &r)
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == activities.ErrShardMissing && attempt < 3 {
			workflow.GetLogger(ctx).Warn("a shard's gradient went missing; the step's shards run again", "JobID", j.id, "Done", in.Done)
			continue
		}
		if err != nil {
			return nil, err
		}
		j.sticky = r.WorkerQueue
		j.progress.Workers = K
		j.prev = &activities.PreviousStep{Done: in.Done, Shards: shards, Checksum: r.Checksum, StateBytes: r.StateBytes}
		return &r, nil
	}
}

// shards runs the step's Gradient activities side by side and returns their
// results in shard order; the first failure cancels the others.
func (j *job) shards(ctx workflow.Context, in activities.TrainInput, queues []string, remaining time.Duration) ([]activities.ShardResult, error) {
	ctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	K := len(queues)
	out := make([]activities.ShardResult, K)
	var prev *activities.PreviousStep
	if j.prev != nil && j.prev.Done+1 == in.Done {
		prev = j.prev
	}
	var first error
	wg := workflow.NewWaitGroup(ctx)
	for k := range K {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			err := j.onWorker(ctx, queues[k], fmt.Sprintf("step %d, shard %d of %d", in.Done+1, k+1, K), remaining, a.Gradient,
				activities.ShardInput{JobID: in.JobID, BaseStep: in.BaseStep, Done: in.Done, TotalSteps: in.TotalSteps, Shard: k, Shards: K, Previous: prev},
				&out[k])
			if err != nil && first == nil {
				first = err
				cancel()
			}
		})
	}
	wg.Wait(ctx)
	if first != nil {
		return nil, first
	}
	return out, nil
}

// onWorker runs activity fn on a worker's own queue, and, when that worker
// does not run it (gone, or failing in a way that is retried), on any
// holder of the base model with the usual retries.
func (j *job) onWorker(ctx workflow.Context, queue, summary string, remaining time.Duration, fn, in, out any) error {
	o := stickyTrainOptions(j.opts, queue, remaining)
	o.Summary = summary
	o.RetryPolicy.NonRetryableErrorTypes = []string{activities.ErrShardMissing}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), fn, in).Get(ctx, out)
	if err == nil || ctx.Err() != nil || !movable(err) {
		return err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrShardMissing {
		return err
	}
	workflow.GetLogger(ctx).Warn("a worker did not run its part of a step; another holder of the base model runs it",
		"JobID", j.id, "WorkerQueue", queue, "Activity", summary, "Error", err)
	o = trainOptions(j.opts, j.computeQueue(ctx), remaining)
	o.Summary = summary + " (moved)"
	o.RetryPolicy.NonRetryableErrorTypes = []string{activities.ErrShardMissing}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), fn, in).Get(ctx, out)
}
