package workflows

import (
	"time"

	"github.com/trainyard/trainyard"
)

// The types in this file travel through workflow histories: fields may be
// added (their zero value must keep the old behaviour) but never renamed or
// retyped, or running workflows fail to replay.

// RLJobInput starts an RL job: one training step from the trajectory groups
// stored with the job.
type RLJobInput struct {
	JobID   string
	Options Options
}

// SFTJobInput starts (or, with Resume, continues) an SFT job.
type SFTJobInput struct {
	JobID   string
	Options Options
	// Resume is set when the workflow continued as new: the job already
	// has its turn, its prepared plan and Done steps.
	Resume *Resume
}

// Resume is the state an SFT job carries across continue-as-new.
type Resume struct {
	// StartedAt is when the job's first run started: its deadline counts
	// from there.
	StartedAt  time.Time
	BaseStep   int
	TotalSteps int
	Done       int
	Metrics    map[string]float64
	// Pauses counts the job's completed pause/resume cycles (each added
	// two events before the next gradient_step); PausedFor is the time
	// it spent PAUSED, which its deadline does not count.
	Pauses    int           `json:",omitempty"`
	PausedFor time.Duration `json:",omitempty"`
	// BaseModel is the job's base model once placed (routeVersion), and
	// WorkerQueue the own task queue of the worker holding its state: the
	// next run's chunks go there.
	BaseModel   string `json:",omitempty"`
	WorkerQueue string `json:",omitempty"`
}

// Options tune a job's workflow. Zero fields take the defaults.
type Options struct {
	// HeartbeatTimeout is how long a step may go without a heartbeat before
	// Temporal retries it, possibly on another worker (default 15 s).
	HeartbeatTimeout time.Duration
	// TrainActivitiesPerRun is how many Train activities an SFT workflow
	// runs before it continues as new (default 200); Temporal may suggest
	// continuing earlier, which is honoured too.
	TrainActivitiesPerRun int
	// Deadline bounds the whole job, from its first run's start (default
	// 24 h). Until it passes, failures of the platform's own dependencies
	// are retried; a job still unfinished then fails, saying so.
	Deadline time.Duration
	// MaxWorkers is how many workers one step may be spread over: when more
	// than one live worker holds the job's base model, each step's batch is
	// split into that many shards, one per worker (data-parallel steps). 0
	// or 1 keeps every step on one worker.
	MaxWorkers int `json:",omitempty"`
}

func (o Options) withDefaults() Options {
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = 15 * time.Second
	}
	if o.TrainActivitiesPerRun <= 0 {
		o.TrainActivitiesPerRun = 200
	}
	if o.Deadline <= 0 {
		o.Deadline = 24 * time.Hour
	}
	return o
}

// JobResult is the result of a job workflow that completed.
type JobResult struct {
	JobID          string
	CheckpointStep int
	Steps          int
	Metrics        map[string]float64
}

// ProgressQuery is the name of the query that returns a job's Progress.
const ProgressQuery = "progress"

// Phases of a job, as Progress reports them.
const (
	PhaseFetching  = "fetching"  // copying the SFT training data in
	PhaseWaiting   = "waiting"   // an older job on the model runs first
	PhasePreparing = "preparing" // loading and tokenising the input
	PhaseTraining  = "training"
	PhasePausing   = "pausing" // a pause waits for the step in progress
	PhasePaused    = "paused"
	PhaseSaving    = "saving" // recording the checkpoint
	PhaseDone      = "done"
)

// Progress is a job's live state as its workflow knows it.
type Progress struct {
	JobID          string
	Status         trainyard.JobStatus
	Phase          string
	CurrentStep    int
	TotalSteps     int
	Metrics        map[string]float64
	CheckpointStep int // 0 until recorded
	// Workers is how many workers the last step ran on (1 unless the job's
	// steps are spread over several; 0 before the first step).
	Workers int `json:",omitempty"`
	Error   string
}
