package trainyard

import (
	"context"
	"slices"
	"time"
)

// WorkerProcess is a `trainyard worker` (or `serve`) process as the worker
// registry records it: which job task queue it serves and which base models
// it holds. Workflows route a job's training to workers holding its base
// model, and a job whose base model no live worker holds waits, saying so.
type WorkerProcess struct {
	// ID is chosen by the process at start (a UUIDv7); a restarted process
	// is a new one. Its own compute task queue is named after it.
	ID string
	// TaskQueue is the job task queue it polls (TRAINYARD_TASK_QUEUE).
	TaskQueue string
	// BaseModels are the base models it trains on.
	BaseModels []string
	// StartedAt is when it first registered; HeartbeatAt its last heartbeat
	// (both by the database's clock).
	StartedAt, HeartbeatAt time.Time
	// Live reports, by the database's clock when the row was read, that its
	// lease has not expired.
	Live bool
}

// Holds reports whether w trains on the base model.
func (w *WorkerProcess) Holds(base string) bool { return slices.Contains(w.BaseModels, base) }

// WorkerRegistry is where workers announce the base models they hold. Every
// time in it comes from the database's clock.
type WorkerRegistry interface {
	// HeartbeatWorker records w (inserting its row the first time) and
	// renews its lease until lease from now.
	HeartbeatWorker(ctx context.Context, w *WorkerProcess, lease time.Duration) error
	// DeregisterWorker removes the worker's row; a missing row is fine.
	DeregisterWorker(ctx context.Context, id string) error
	// ListWorkers returns the workers registered on taskQueue, Live
	// computed now.
	ListWorkers(ctx context.Context, taskQueue string) ([]*WorkerProcess, error)
	// PruneWorkers deletes the rows whose lease expired more than age ago.
	PruneWorkers(ctx context.Context, age time.Duration) (int, error)
}
