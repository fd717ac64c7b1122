package trainyard

import (
	"context"
	"encoding/json"
	"time"
)

// JobKind says what a training job does.
type JobKind string

// Job kinds.
const (
	JobKindRL  JobKind = "rl"
	JobKindSFT JobKind = "sft"
)

// JobStatus is the lifecycle state of a job.
type JobStatus string

// Job statuses. QUEUED until its workflow starts the first step; PAUSED
// while a pause holds it between two steps (trainyard's own); exactly one of
// the last three once it ends.
const (
	JobQueued    JobStatus = "QUEUED"
	JobRunning   JobStatus = "RUNNING"
	JobPaused    JobStatus = "PAUSED"
	JobCompleted JobStatus = "COMPLETED"
	JobFailed    JobStatus = "FAILED"
	JobCancelled JobStatus = "CANCELLED"
)

// Terminal reports whether the status is final.
func (s JobStatus) Terminal() bool {
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

// Job is one RL or SFT training job. Its input (trajectory groups or the SFT
// data reference) is stored durably before its workflow starts.
type Job struct {
	ID             string
	AccountID      string
	ModelID        string
	Kind           JobKind
	Status         JobStatus
	IdempotencyKey *string
	// Config is the job's request configuration as received
	// (experimental_config, SFT config, training_data_url).
	Config     json.RawMessage
	WorkflowID string
	RunID      string
	// RequestHash is the digest of the job's request in canonical form
	// ("" for jobs created before it was kept): a repeated Idempotency-Key
	// must come with the same request.
	RequestHash string
	// RetryOf is the job this one retries ("" for an original); RetriedBy
	// the job that retried this one ("" when none did).
	RetryOf, RetriedBy string
	// PauseRequested is set while a pause waits for the step in progress
	// to end; the Train activity reads it between steps.
	PauseRequested bool
	CurrentStep    int  // gradient steps done so far; never decreases
	SavedStep      int  // gradient steps whose training state is stored
	TotalSteps     int  // 0 until known
	Checkpoint     *int // the model step this job produced, once recorded
	LatestMetrics  map[string]float64
	Error          *string
	CreatedAt      time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
}

// JobUpdate changes some fields of a job; nil fields are left alone.
type JobUpdate struct {
	Status *JobStatus
	RunID  *string
	// CurrentStep and SavedStep only ever grow: a smaller value (from a
	// retried or reset run) leaves the stored one, and LatestMetrics goes
	// with CurrentStep.
	CurrentStep   *int
	SavedStep     *int
	TotalSteps    *int
	Checkpoint    *int
	LatestMetrics map[string]float64
	Error         *string
	StartedAt     *time.Time
	FinishedAt    *time.Time
	// PauseRequested sets or clears the job's pause request.
	PauseRequested *bool
}

// JobStore persists training jobs.
type JobStore interface {
	// CreateJob inserts j (filling ID unless set, and CreatedAt). When the
	// account already has a job with the same IdempotencyKey, it returns that
	// job and created=false instead.
	CreateJob(ctx context.Context, j *Job) (job *Job, created bool, err error)
	// FindJob returns the account's job by id (ENOTFOUND for another's).
	FindJob(ctx context.Context, accountID, jobID string) (*Job, error)
	// GetJob returns a job by id regardless of account (internal use by
	// activities, which are given ids by trusted workflows).
	GetJob(ctx context.Context, jobID string) (*Job, error)
	// ListJobs pages through the account's jobs, newest first by default;
	// modelID filters when non-empty.
	ListJobs(ctx context.Context, accountID, modelID string, opts ListOptions) (*Page[*Job], error)
	// UpdateJob applies u. It never moves a terminal job back to a
	// non-terminal status.
	UpdateJob(ctx context.Context, jobID string, u JobUpdate) error
}

// EventType is the type of a training job event.
type EventType string

// Event types, in the order a job emits them: one started, N gradient steps,
// exactly one of ended/failed. A pause adds a training_paused and, when the
// job goes on, a training_resumed between two gradient steps (trainyard's own
// types, not in the hosted service's document).
const (
	EventTrainingStarted EventType = "training_started"
	EventGradientStep    EventType = "gradient_step"
	EventTrainingPaused  EventType = "training_paused"
	EventTrainingResumed EventType = "training_resumed"
	EventTrainingEnded   EventType = "training_ended"
	EventTrainingFailed  EventType = "training_failed"
)

// Event is one record of a job's progress. Seq numbers a job's events from 1
// without gaps; it is the idempotency key of the write and the list order.
type Event struct {
	ID        string
	JobID     string
	Seq       int
	Type      EventType
	Data      map[string]any
	CreatedAt time.Time
}

// EventStore persists job events.
type EventStore interface {
	// AppendEvent writes e (filling ID and CreatedAt). Writing the same
	// (job, seq) again is a no-op that returns the stored event, so retried
	// activities never duplicate events. Once a job has its terminal event,
	// any new event (a second terminal one included) is ECONFLICT.
	AppendEvent(ctx context.Context, e *Event) (*Event, error)
	// ListEvents pages through a job's events by Seq; After is an event id
	// (exclusive).
	ListEvents(ctx context.Context, jobID string, opts ListOptions) (*Page[*Event], error)
	// LastEvent returns the job's event with the highest Seq, or ENOTFOUND.
	LastEvent(ctx context.Context, jobID string) (*Event, error)
	// CountEvents returns how many events of type typ the job has.
	CountEvents(ctx context.Context, jobID string, typ EventType) (int, error)
	// EndJob appends the job's terminal event (training_ended or
	// training_failed) after its last one and applies u (its terminal
	// status) in one transaction, so the event and the status are seen
	// together. A job that already has a terminal event keeps it and it is
	// returned; u is applied again only when that event is of e's type.
	EndJob(ctx context.Context, e *Event, u JobUpdate) (*Event, error)
}
