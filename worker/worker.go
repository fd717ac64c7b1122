// Package worker runs trainyard's job workflows and activities on Temporal:
// it registers them, sets the worker options (training is CPU-bound, so a
// worker runs few training activities at a time) and repairs jobs whose
// workflow never started or ended without closing them.
package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/workflows"
)

// Config tunes a Worker. Zero fields take the defaults.
type Config struct {
	// TaskQueue of the job workflows (workflows.DefaultTaskQueue).
	TaskQueue string
	// TrainingConcurrency is how many Prepare and Train activities run at
	// once in this worker (1): each one keeps every core busy.
	TrainingConcurrency int
	// FetchConcurrency is how many downloads of training data (Fetch) run
	// at once in this worker (4), apart from training.
	FetchConcurrency int
	// BookkeepingConcurrency is how many other activities run at once
	// (1000). Jobs waiting for their model hold one each while they wait.
	BookkeepingConcurrency int
	// StopTimeout is how long Stop lets running activities finish; a Train
	// activity ends its chunk after the step in progress and stores its
	// state (30 s).
	StopTimeout time.Duration
	// Identity names the worker in Temporal (the SDK's default when empty).
	Identity string
}

func (c *Config) applyDefaults() {
	if c.TaskQueue == "" {
		c.TaskQueue = workflows.DefaultTaskQueue
	}
	if c.TrainingConcurrency <= 0 {
		c.TrainingConcurrency = 1
	}
	if c.FetchConcurrency <= 0 {
		c.FetchConcurrency = 4
	}
	if c.BookkeepingConcurrency <= 0 {
		c.BookkeepingConcurrency = 1000
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 30 * time.Second
	}
}

// Worker polls the job task queue (workflows and bookkeeping activities),
// its compute queue (Prepare and Train) and its fetch queue (Fetch).
type Worker struct {
	main, compute, fetch sdkworker.Worker
	log                  *zap.Logger
}

// New registers the workflows and acts on two SDK workers over c.
func New(c client.Client, acts *activities.Activities, cfg Config, log *zap.Logger) (*Worker, error) {
	if c == nil || acts == nil {
		return nil, errors.New("worker: a Temporal client and the activities are required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	cfg.applyDefaults()
	main := sdkworker.New(c, cfg.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: cfg.BookkeepingConcurrency,
		MaxHeartbeatThrottleInterval:       heartbeatThrottle,
		WorkerStopTimeout:                  cfg.StopTimeout,
		Identity:                           cfg.Identity,
	})
	main.RegisterWorkflowWithOptions(workflows.RLJob, workflow.RegisterOptions{Name: "RLJob"})
	main.RegisterWorkflowWithOptions(workflows.SFTJob, workflow.RegisterOptions{Name: "SFTJob"})
	register(main, map[string]any{"WaitTurn": acts.WaitTurn, "Complete": acts.Complete, "Fail": acts.Fail})

	compute := sdkworker.New(c, workflows.ComputeTaskQueue(cfg.TaskQueue), sdkworker.Options{
		MaxConcurrentActivityExecutionSize: cfg.TrainingConcurrency,
		// One poller per slot: a worker should not take a step it has
		// no room to run while another worker is idle.
		MaxConcurrentActivityTaskPollers: cfg.TrainingConcurrency,
		MaxHeartbeatThrottleInterval:     heartbeatThrottle,
		WorkerStopTimeout:                cfg.StopTimeout,
		Identity:                         cfg.Identity,
	})
	register(compute, map[string]any{"Prepare": acts.Prepare, "Train": acts.Train})

	fetch := sdkworker.New(c, workflows.FetchTaskQueue(cfg.TaskQueue), sdkworker.Options{
		MaxConcurrentActivityExecutionSize: cfg.FetchConcurrency,
		MaxConcurrentActivityTaskPollers:   min(cfg.FetchConcurrency, 4),
		MaxHeartbeatThrottleInterval:       heartbeatThrottle,
		WorkerStopTimeout:                  cfg.StopTimeout,
		Identity:                           cfg.Identity,
	})
	register(fetch, map[string]any{"Fetch": acts.Fetch})
	return &Worker{main: main, compute: compute, fetch: fetch, log: log}, nil
}

// heartbeatThrottle caps how long the SDK holds back an activity's
// heartbeats. An activity learns that its job was cancelled from a
// heartbeat's answer, and the SDK's default (0.8 × the 15 s heartbeat
// timeout) made a cancel take up to 12 s to reach a running Train chunk;
// one heartbeat a second per running activity costs the server nothing.
const heartbeatThrottle = time.Second

// register registers activities under the names the workflows use (the
// method names).
func register(w sdkworker.Worker, acts map[string]any) {
	for name, fn := range acts {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// Start starts polling; it returns once both workers poll.
func (w *Worker) Start() error {
	if err := w.main.Start(); err != nil {
		return fmt.Errorf("worker: start the job worker: %w", err)
	}
	if err := w.compute.Start(); err != nil {
		w.main.Stop()
		return fmt.Errorf("worker: start the compute worker: %w", err)
	}
	if err := w.fetch.Start(); err != nil {
		w.compute.Stop()
		w.main.Stop()
		return fmt.Errorf("worker: start the fetch worker: %w", err)
	}
	return nil
}

// Stop stops polling and waits up to the stop timeout for running
// activities. A Train activity sees the stop, finishes its step, stores its
// state and returns, so another worker continues without recomputing.
func (w *Worker) Stop() {
	w.fetch.Stop()
	w.compute.Stop()
	w.main.Stop()
}

// Run starts the worker and stops it when ctx is done.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.log.Info("stopping the Temporal worker")
	w.Stop()
	return nil
}
