package worker

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// OpenJobs lists jobs that are not finished. storage/postgres implements it.
type OpenJobs interface {
	// UnfinishedJobs returns up to limit QUEUED or RUNNING jobs created
	// before createdBefore, oldest first.
	UnfinishedJobs(ctx context.Context, createdBefore time.Time, limit int) ([]*trainyard.Job, error)
}

// JobWorkflows is what the reconciler needs from workflows.Client.
type JobWorkflows interface {
	StartJob(ctx context.Context, job *trainyard.Job) error
	ReconcileJob(ctx context.Context, job *trainyard.Job) (*trainyard.Job, error)
}

// Reconciler repairs open jobs whose workflow cannot finish them: it starts
// the workflow of a job that has none (Temporal was down when the API
// created the job) and closes a job whose workflow ended without closing
// it (terminated from the Temporal UI or CLI). It runs when the worker
// starts and then periodically; every action is idempotent, so several
// workers may run it at once.
type Reconciler struct {
	Jobs      OpenJobs
	Workflows JobWorkflows
	Log       *zap.Logger
	// Grace is the minimum age of a job before it is repaired, so a job
	// that the API is starting right now is left alone (30 s).
	Grace time.Duration
	// Interval between passes (1 min).
	Interval time.Duration
}

// batchSize bounds one pass; the next pass continues.
const batchSize = 500

// Run reconciles at once and then every Interval until ctx is done.
func (r *Reconciler) Run(ctx context.Context) {
	if r.Grace <= 0 {
		r.Grace = 30 * time.Second
	}
	if r.Interval <= 0 {
		r.Interval = time.Minute
	}
	for {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.log().Warn("job reconciliation pass failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.Interval):
		}
	}
}

// Pass reconciles the open jobs older than Grace once.
func (r *Reconciler) Pass(ctx context.Context) error {
	jobs, err := r.Jobs.UnfinishedJobs(ctx, time.Now().Add(-r.Grace), batchSize)
	if err != nil {
		return err
	}
	for _, job := range jobs {
		if err := r.Workflows.StartJob(ctx, job); err != nil {
			r.log().Warn("could not start the workflow of an open job", zap.String("job_id", job.ID), zap.Error(err))
			continue
		}
		after, err := r.Workflows.ReconcileJob(ctx, job)
		if err != nil {
			r.log().Warn("could not reconcile an open job", zap.String("job_id", job.ID), zap.Error(err))
			continue
		}
		if after.Status.Terminal() {
			r.log().Info("closed a job whose workflow had ended", zap.String("job_id", job.ID),
				zap.String("status", string(after.Status)))
		}
	}
	return nil
}

func (r *Reconciler) log() *zap.Logger {
	if r.Log == nil {
		return zap.NewNop()
	}
	return r.Log
}
