// Package activities holds every side effect of a training job: waiting for
// the job's turn on its model, loading and tokenising its input, running
// gradient steps on the engine, storing adapter and optimizer state,
// recording checkpoints, events and job status. Workflows orchestrate these
// methods; only the worker constructs an Activities.
//
// Every activity is idempotent under retry: events are keyed by (job, seq),
// checkpoint objects and in-progress state live at deterministic keys, and
// checkpoint rows are written after their objects.
package activities

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/retention"
)

// JobQueue finds the jobs that are not finished yet. It is implemented by
// storage/postgres.
type JobQueue interface {
	// OldestUnfinishedJob returns the QUEUED or RUNNING job of modelID with
	// the smallest id (ids are UUIDv7, so the one created first), or
	// ENOTFOUND when there is none.
	OldestUnfinishedJob(ctx context.Context, modelID string) (*trainyard.Job, error)
}

// WorkflowState is what the job gate needs to know about a job's workflow.
type WorkflowState struct {
	// Exists is false when no workflow was ever started for the job.
	Exists bool
	// Running is true while the workflow (its latest run) is open.
	Running bool
	// Status is Temporal's status name of the latest run, e.g. "Running",
	// "Completed", "Canceled", "Terminated", "TimedOut", "Failed".
	Status string
	// RunID is the id of the latest run.
	RunID string
	// Retrying describes an activity of the running workflow that failed
	// and waits for its next attempt; nil when none does.
	Retrying *RetryingActivity
}

// RetryingActivity is an activity that failed and will be tried again.
type RetryingActivity struct {
	// Activity is its type, e.g. "Fetch" or "Prepare".
	Activity string
	// Attempt is the number of the attempt under way or next.
	Attempt int
	// LastError is the message of its last failure, written for users
	// (activities never put hosts, DSNs or SQL text in messages).
	LastError string
	// NextAttemptAt is when it runs again, when known.
	NextAttemptAt *time.Time
}

// Workflows lets the job gate look at, and start, the workflows of other
// jobs, so a job whose workflow was terminated or never started cannot block
// the model forever. The worker implements it with a Temporal client.
type Workflows interface {
	DescribeJob(ctx context.Context, jobID string) (WorkflowState, error)
	StartJob(ctx context.Context, job *trainyard.Job) error
	// CancelRun asks one run of the job's workflow to cancel.
	CancelRun(ctx context.Context, jobID, runID string) error
}

// BaseModels opens base models by name (the model's base_model).
type BaseModels interface {
	// Base returns the base model; ENOTFOUND (a trainyard error) when the
	// name is unknown.
	Base(ctx context.Context, name string) (*engine.Base, error)
}

// Deps are the dependencies of the activities. Workflows may be nil (then the
// gate cannot repair other jobs' workflows and simply waits).
type Deps struct {
	Jobs      trainyard.JobStore
	Events    trainyard.EventStore
	Models    trainyard.ModelStore
	Blobs     trainyard.BlobStore
	Queue     JobQueue
	Workflows Workflows
	Bases     BaseModels
	// Workers is the worker registry Place checks for a live holder of a
	// job's base model; nil skips the check.
	Workers WorkerDirectory
	// Files holds uploaded artifacts; nil disables wandb-artifact URLs.
	Files Files
	// HTTP fetches http(s) training data; nil means NewFetchClient with
	// the default AddressPolicy (no loopback or private addresses).
	HTTP   *http.Client
	Logger *zap.Logger
}

// Config tunes the activities. Zero fields take the defaults below.
type Config struct {
	// PollInterval is how often a waiting job looks at the queue (0.5 s).
	PollInterval time.Duration
	// StartGrace is how long a QUEUED job may lack a workflow before a
	// waiting successor starts it (the API normally starts it within
	// milliseconds; 10 s).
	StartGrace time.Duration
	// ChunkDuration bounds one Train activity: it returns after the step
	// that crosses it, so the workflow's progress and history stay fresh
	// (20 s).
	ChunkDuration time.Duration
	// SaveInterval is how often in-progress adapter and optimizer state is
	// stored within a Train activity; state is also stored at its end. A
	// retry recomputes at most this much (5 s).
	SaveInterval time.Duration
	// ProgressInterval is how often a Train activity updates the job row's
	// current step and latest metrics (1 s); every step's event is written
	// at once regardless.
	ProgressInterval time.Duration
	// PauseCheckInterval is how often a Train activity reads the job's
	// pause request between steps (0.1 s): a pause takes effect after the
	// step in progress plus at most this.
	PauseCheckInterval time.Duration
	// ServedWindow: retention keeps a checkpoint a chat completion used
	// within it (retention.DefaultServedWindow).
	ServedWindow time.Duration
	// HeartbeatInterval is how often long activities heartbeat (1 s); it
	// must be well under the workflow's heartbeat timeout. An activity
	// learns that its job was cancelled from a heartbeat's answer, so this
	// (with the worker's heartbeat throttle) bounds how long a cancel takes.
	HeartbeatInterval time.Duration
	// Data says which training_data_url forms SFT jobs may use.
	Data jobspec.DataPolicy
	// MaxDataBytes bounds SFT training data (256 MiB).
	MaxDataBytes int64
	// DownloadStallTimeout fails an http(s) download attempt that receives
	// nothing for this long (1 min); the attempt is retried.
	DownloadStallTimeout time.Duration
	// DownloadTimeout bounds one attempt at copying training data in,
	// however steadily it trickles (5 min); the attempt is retried.
	DownloadTimeout time.Duration
	// DownloadRetryWindow bounds how long a training_data_url that fails
	// in a way that may pass (no route, a timeout, a 503, a server that
	// closes the connection) is retried, counted from the start of the
	// job's first download attempt (5 min): the job fails after it instead
	// of holding its model's queue. An attempt under way is never cut
	// short by it (DownloadTimeout bounds each); outages of the platform's
	// own object store are not bounded by it.
	DownloadRetryWindow time.Duration
	// TrainingSlots is how many Prepare and Train activities run at once in
	// this process (1), whichever compute queue they came from; it should
	// equal the worker's TrainingConcurrency.
	TrainingSlots int
	// FetchPerAccount is how many of a worker's downloads one account may
	// hold at once (2); its other jobs' Fetch attempts wait their turn
	// without holding a slot.
	FetchPerAccount int
	// MemoryLimit is the memory a job's training may use, in bytes (0: no
	// limit). Prepare fails a job whose steps cannot fit it; Train sizes the
	// micro-batches to stay within it.
	MemoryLimit int64
}

func (c *Config) applyDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.PollInterval, 500*time.Millisecond)
	def(&c.StartGrace, 10*time.Second)
	def(&c.ChunkDuration, 20*time.Second)
	def(&c.SaveInterval, 5*time.Second)
	def(&c.ProgressInterval, time.Second)
	def(&c.PauseCheckInterval, 100*time.Millisecond)
	def(&c.HeartbeatInterval, time.Second)
	def(&c.DownloadStallTimeout, time.Minute)
	def(&c.DownloadTimeout, 5*time.Minute)
	def(&c.DownloadRetryWindow, 5*time.Minute)
	if c.FetchPerAccount <= 0 {
		c.FetchPerAccount = 2
	}
	if c.TrainingSlots <= 0 {
		c.TrainingSlots = 1
	}
	if c.MaxDataBytes <= 0 {
		c.MaxDataBytes = 256 << 20
	}
}

// Activities carries the dependencies of every activity method. Register it
// with a worker; workflows refer to its methods through a nil pointer.
type Activities struct {
	d       Deps
	cfg     Config
	plans   planCache
	states  stateCache
	slots   chan struct{} // one per training slot, taken by Prepare and Train
	fetches accountSlots
	prune   *retention.Pruner
	// loaded counts the bytes of training state this instance read from
	// the object store, for the log line of each chunk.
	loaded atomic.Int64
	// lastBusy is when a task was last handed back for want of a slot;
	// yieldJob gives its turn away until yieldUntil (placement.go).
	lastBusy   atomic.Int64
	yieldMu    sync.Mutex
	yieldJob   string
	yieldUntil time.Time
}

// New checks deps and returns the activities.
func New(d Deps, cfg Config) (*Activities, error) {
	if d.Jobs == nil || d.Events == nil || d.Models == nil || d.Blobs == nil || d.Queue == nil || d.Bases == nil {
		return nil, errors.New("activities: Jobs, Events, Models, Blobs, Queue and Bases are required")
	}
	if d.HTTP == nil {
		d.HTTP = NewFetchClient(AddressPolicy{})
	}
	if d.Logger == nil {
		d.Logger = zap.NewNop()
	}
	cfg.applyDefaults()
	return &Activities{d: d, cfg: cfg, fetches: accountSlots{max: cfg.FetchPerAccount},
		states: stateCache{max: cfg.TrainingSlots + 1}, slots: make(chan struct{}, cfg.TrainingSlots),
		prune: &retention.Pruner{Models: d.Models, Blobs: d.Blobs, ServedWindow: cfg.ServedWindow}}, nil
}
