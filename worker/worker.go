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

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/engine"
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
	// BaseModels are the base models this worker trains on: it polls the
	// compute queue of each (workflows.BaseTaskQueue). Empty means the
	// engine's built-in models.
	BaseModels []string
	// ID is the worker's id in the registry and the name of its own compute
	// queue (workflows.WorkerTaskQueue); a new UUIDv7 when empty.
	ID string
	// Registry records the worker and the base models it holds while it
	// runs, so jobs on a base model nobody holds can say so; nil skips it.
	Registry trainyard.WorkerRegistry
	// Heartbeat is how often the registry row is renewed (2 s); the row
	// stays live for three heartbeats.
	Heartbeat time.Duration
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
	if len(c.BaseModels) == 0 {
		c.BaseModels = engine.BuiltinNames()
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 2 * time.Second
	}
}

// Worker polls the job task queue (workflows and bookkeeping activities),
// the compute queues (Prepare and Train): the shared one of runs from
// before routing by base model, one per base model it holds and its own,
// and the fetch queue (Fetch).
type Worker struct {
	main, fetch sdkworker.Worker
	compute     []sdkworker.Worker
	presence    *presence
	id          string
	log         *zap.Logger
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
		// A workflow task waits this long for the worker that ran the
		// workflow last (which keeps it cached) before any worker takes
		// it. When that worker died with the job's Train chunk, the
		// SDK's 5 s came on top of the heartbeat timeout before the
		// chunk moved; workflow tasks take milliseconds, so a live
		// worker answers well within 1 s.
		StickyScheduleToStartTimeout: time.Second,
	})
	main.RegisterWorkflowWithOptions(workflows.RLJob, workflow.RegisterOptions{Name: "RLJob"})
	main.RegisterWorkflowWithOptions(workflows.SFTJob, workflow.RegisterOptions{Name: "SFTJob"})
	register(main, map[string]any{"WaitTurn": acts.WaitTurn, "Place": acts.Place, "Holders": acts.Holders, "Complete": acts.Complete, "Fail": acts.Fail,
		"RequestPause": acts.RequestPause, "Pause": acts.Pause, "Resume": acts.Resume, "ApplyRetention": acts.ApplyRetention})

	if cfg.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("worker: id: %w", err)
		}
		cfg.ID = id.String()
	}
	own := workflows.WorkerTaskQueue(cfg.TaskQueue, cfg.ID)
	// Prepare and Train learn the worker's own queue from their context
	// and report it, so the job's next chunk comes back here.
	actx := activities.WithWorkerQueue(context.Background(), own)
	queues := []string{own, workflows.ComputeTaskQueue(cfg.TaskQueue)}
	for _, b := range cfg.BaseModels {
		queues = append(queues, workflows.BaseTaskQueue(cfg.TaskQueue, b))
	}
	var compute []sdkworker.Worker
	for _, q := range queues {
		w := sdkworker.New(c, q, sdkworker.Options{
			MaxConcurrentActivityExecutionSize: cfg.TrainingConcurrency,
			// One poller per slot: a worker should not take a step it
			// has no room to run while another worker is idle. (The
			// activities bound the work of all queues together and hand
			// back what a busy worker takes from a shared queue.)
			MaxConcurrentActivityTaskPollers: cfg.TrainingConcurrency,
			MaxHeartbeatThrottleInterval:     heartbeatThrottle,
			WorkerStopTimeout:                cfg.StopTimeout,
			Identity:                         cfg.Identity,
			BackgroundActivityContext:        actx,
		})
		register(w, map[string]any{"Prepare": acts.Prepare, "Train": acts.Train, "Gradient": acts.Gradient, "ApplyStep": acts.ApplyStep})
		compute = append(compute, w)
	}

	fetch := sdkworker.New(c, workflows.FetchTaskQueue(cfg.TaskQueue), sdkworker.Options{
		MaxConcurrentActivityExecutionSize: cfg.FetchConcurrency,
		MaxConcurrentActivityTaskPollers:   min(cfg.FetchConcurrency, 4),
		MaxHeartbeatThrottleInterval:       heartbeatThrottle,
		WorkerStopTimeout:                  cfg.StopTimeout,
		Identity:                           cfg.Identity,
	})
	register(fetch, map[string]any{"Fetch": acts.Fetch})
	wk := &Worker{id: cfg.ID, main: main, compute: compute, fetch: fetch, log: log}
	if cfg.Registry != nil {
		wk.presence = &presence{registry: cfg.Registry, interval: cfg.Heartbeat, log: log,
			row: trainyard.WorkerProcess{ID: cfg.ID, TaskQueue: cfg.TaskQueue, BaseModels: cfg.BaseModels}}
	}
	return wk, nil
}

// ID is the worker's id (its registry row, its own compute queue).
func (w *Worker) ID() string { return w.id }

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

// Start registers the worker (with a registry) and starts polling; it
// returns once every queue is polled.
func (w *Worker) Start() error {
	if w.presence != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := w.presence.register(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("worker: register in the worker registry: %w", err)
		}
	}
	started := []sdkworker.Worker{}
	for _, sw := range append([]sdkworker.Worker{w.main, w.fetch}, w.compute...) {
		if err := sw.Start(); err != nil {
			for _, s := range started {
				s.Stop()
			}
			return fmt.Errorf("worker: start polling: %w", err)
		}
		started = append(started, sw)
	}
	if w.presence != nil {
		w.presence.start()
	}
	return nil
}

// Stop stops polling and waits up to the stop timeout for running
// activities. A Train activity sees the stop, finishes its step, stores its
// state and returns, so another worker continues without recomputing. The
// registry row goes last: until then the worker still runs what it has.
func (w *Worker) Stop() {
	w.fetch.Stop()
	for _, c := range w.compute {
		c.Stop()
	}
	w.main.Stop()
	if w.presence != nil {
		w.presence.stop()
	}
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
