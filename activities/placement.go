package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
)

// WorkerDirectory lists the workers of a job task queue (the worker
// registry; storage/postgres implements it).
type WorkerDirectory interface {
	ListWorkers(ctx context.Context, taskQueue string) ([]*trainyard.WorkerProcess, error)
}

// ErrNoWorker types the retryable error of a job whose base model no live
// worker holds: the job stays queued, and its last_error says why.
const ErrNoWorker = "NoWorkerHoldsBaseModel"

// ErrBusy types the retryable error of a Prepare or Train that reached a
// worker whose training slots are all taken: Temporal hands it to the next
// poller of its queue, a worker that may be idle.
const ErrBusy = "WorkerBusy"

// busyRetry is how soon a task refused by a busy worker is offered again.
const busyRetry = time.Second

// PlaceInput asks where a job's training may run.
type PlaceInput struct {
	JobID string
}

// PlaceResult names the job's base model: its Prepare and Train activities
// go to the task queue of the workers holding it.
type PlaceResult struct {
	BaseModel string
}

// Place finds the job's base model and checks that a live worker of this
// task queue holds it. When none does, it fails with a retryable error
// that says so: the job stays QUEUED, retried until such a worker starts,
// and the API shows the message as the job's last_error. Without a worker
// registry (Deps.Workers nil) the check is skipped.
func (a *Activities) Place(ctx context.Context, in PlaceInput) (*PlaceResult, error) {
	job, err := a.activeJob(ctx, in.JobID)
	if err != nil {
		return nil, err
	}
	model, err := a.d.Models.FindModel(ctx, job.AccountID, job.ModelID)
	if err != nil {
		return nil, classify(err, "load the job's model")
	}
	if a.d.Workers == nil {
		return &PlaceResult{BaseModel: model.BaseModel}, nil
	}
	queue := activity.GetInfo(ctx).TaskQueue
	workers, err := a.d.Workers.ListWorkers(ctx, queue)
	if err != nil {
		return nil, classify(err, "look up the workers")
	}
	for _, w := range workers {
		if w.Live && w.Holds(model.BaseModel) {
			return &PlaceResult{BaseModel: model.BaseModel}, nil
		}
	}
	return nil, temporal.NewApplicationError(fmt.Sprintf(
		"no running worker holds the base model %q; the job stays queued until a worker that holds it starts", model.BaseModel),
		ErrNoWorker)
}

// workerQueueKey is the context key of the worker's own compute task queue.
type workerQueueKey struct{}

// WithWorkerQueue returns ctx carrying the worker's own compute task queue
// (the worker package sets it as its activities' background context).
// Prepare and Train report it, so the job's next chunks go to the worker
// that holds the job's state in memory.
func WithWorkerQueue(ctx context.Context, queue string) context.Context {
	return context.WithValue(ctx, workerQueueKey{}, queue)
}

// workerQueue is the worker's own compute task queue, or "".
func workerQueue(ctx context.Context) string {
	q, _ := ctx.Value(workerQueueKey{}).(string)
	return q
}

// computeSlot takes one of the worker's training slots for a Prepare or
// Train and returns its release. A worker polls several compute queues
// (its own, one per base model held), each with slots of its own in the
// SDK, so the bound on CPU-heavy work per process is kept here. A task that
// came for this worker (its own queue) waits for a slot, heartbeating; a
// task from a shared queue is handed back at once when every slot is taken,
// so an idle worker can take it instead. (Without a queue of its own, as in
// tests that drive activities directly, every task waits.)
// While it waits it heartbeats hb, the activity's durable progress.
//
// Jobs take turns: a chunk that ends while a task was handed back within
// the last two retry delays does not ask for its job's next chunk, and
// this worker hands that chunk back for as long, so the waiting task gets
// the slot (keeping both jobs' states cached, so taking turns on one
// worker reads nothing back).
func (a *Activities) computeSlot(ctx context.Context, jobID string, hb heartbeat) (func(), error) {
	release := func() { <-a.slots }
	shared := workerQueue(ctx) != "" && activity.GetInfo(ctx).TaskQueue != workerQueue(ctx)
	if !(shared && a.yielding(jobID)) {
		select {
		case a.slots <- struct{}{}:
			return release, nil
		default:
		}
	}
	if shared {
		a.lastBusy.Store(time.Now().UnixNano())
		return nil, temporal.NewApplicationErrorWithOptions("every training slot of this worker is taken; the step goes to another worker",
			ErrBusy, temporal.ApplicationErrorOptions{NextRetryDelay: busyRetry, Category: temporal.ApplicationErrorCategoryBenign})
	}
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case a.slots <- struct{}{}:
			return release, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			activity.RecordHeartbeat(ctx, hb)
		}
	}
}

// othersWaiting reports whether a task was handed back lately: another job
// waits for this worker's slot.
func (a *Activities) othersWaiting() bool {
	return time.Since(time.Unix(0, a.lastBusy.Load())) < 2*busyRetry
}

// yieldTurn lets the job's next chunk find no slot here for two retry
// delays, so the task that waits gets it first.
func (a *Activities) yieldTurn(jobID string) {
	a.yieldMu.Lock()
	defer a.yieldMu.Unlock()
	a.yieldJob, a.yieldUntil = jobID, time.Now().Add(2*busyRetry)
}

// yielding reports whether the job is giving its turn away.
func (a *Activities) yielding(jobID string) bool {
	a.yieldMu.Lock()
	defer a.yieldMu.Unlock()
	return a.yieldJob == jobID && time.Now().Before(a.yieldUntil)
}
