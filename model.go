package trainyard

import (
	"context"
	"time"
)

// Model is a trainable model registered by an account: a base model plus the
// chain of checkpoints that training jobs produce. (Entity, Project, Name) is
// unique; the chat completions name is wandb-artifact:///ENTITY/PROJECT/NAME.
type Model struct {
	ID        string
	AccountID string
	Entity    string
	Project   string
	Name      string
	BaseModel string
	RunID     *string
	CreatedAt time.Time
	// ForkedFrom is the id of the checkpoint (of another model of the
	// account) this model was forked from; "" for a model trained from its
	// base. A fork's step 0 checkpoint is a copy of it.
	ForkedFrom string
	// CheckpointPolicy is what retention keeps after every job; nil keeps
	// every checkpoint.
	CheckpointPolicy *CheckpointPolicy
}

// Checkpoint is one trained state of a model. Step 1 is the first training
// step; step 0 has a checkpoint only in a fork (a copy of its source, written
// when the fork is created), otherwise it is the base model alone. The row is
// written only after its objects are in the blob store, so a listed
// checkpoint is always loadable.
type Checkpoint struct {
	ID        string
	ModelID   string
	Step      int
	JobID     *string
	Metrics   map[string]float64
	CreatedAt time.Time
}

// ModelSummary is a model with its newest checkpoint, as a list of models
// shows it: the step it reached and that step's metrics, without one more
// request per model.
type ModelSummary struct {
	Model
	// Latest is the checkpoint with the highest step; nil when none.
	Latest *Checkpoint
}

// ModelStore persists models and their checkpoints. Every method is scoped to
// an account; a model of another account is ENOTFOUND.
type ModelStore interface {
	// CreateModel inserts m (with its CheckpointPolicy), filling ID and
	// CreatedAt; ECONFLICT when the account already has a model with that
	// entity/project/name.
	CreateModel(ctx context.Context, m *Model) error
	// FindModel returns the account's model by id.
	FindModel(ctx context.Context, accountID, modelID string) (*Model, error)
	// FindModelSummary returns the account's model by id with its newest
	// checkpoint.
	FindModelSummary(ctx context.Context, accountID, modelID string) (*ModelSummary, error)
	// ListModels pages through the account's models by id (creation
	// order), newest first unless opts.Order is asc, each with its newest
	// checkpoint.
	ListModels(ctx context.Context, accountID string, opts ListOptions) (*Page[*ModelSummary], error)
	// FindModelByName returns the account's model by entity/project/name.
	FindModelByName(ctx context.Context, accountID, entity, project, name string) (*Model, error)
	// DeleteModel removes the model with its checkpoints, logs and jobs' rows
	// and returns the checkpoints that were removed, so their objects can go.
	DeleteModel(ctx context.Context, accountID, modelID string) ([]*Checkpoint, error)

	// CreateCheckpoint records a checkpoint of a training step (1 or more),
	// filling ID and CreatedAt. It is idempotent on (model, step): a second
	// call returns the existing row.
	CreateCheckpoint(ctx context.Context, c *Checkpoint) error
	// FindCheckpoint returns the checkpoint of modelID at step.
	FindCheckpoint(ctx context.Context, modelID string, step int) (*Checkpoint, error)
	// LatestCheckpoint returns the highest step, or ENOTFOUND when none.
	LatestCheckpoint(ctx context.Context, modelID string) (*Checkpoint, error)
	// ListCheckpoints pages through checkpoints ordered by step.
	ListCheckpoints(ctx context.Context, modelID string, opts ListOptions) (*Page[*Checkpoint], error)
	// DeleteCheckpoints removes the given steps and reports which were
	// deleted and which did not exist.
	DeleteCheckpoints(ctx context.Context, modelID string, steps []int) (deleted []*Checkpoint, notFound []int, err error)
	// MergeCheckpointMetrics adds metrics to the checkpoint at step, keeping
	// existing keys that are not overwritten. ENOTFOUND when absent.
	MergeCheckpointMetrics(ctx context.Context, modelID string, step int, metrics map[string]float64) error
	// CreateForkedModel creates m from source, a checkpoint of another model
	// of the same account, with its step 0 checkpoint (metrics copied from
	// source), atomically; ENOTFOUND when source is not the account's (or
	// was deleted meanwhile), ECONFLICT when the name is taken.
	CreateForkedModel(ctx context.Context, m *Model, source *Checkpoint) (*Checkpoint, error)
	// SetCheckpointPolicy replaces the model's checkpoint policy (nil: keep
	// everything) and returns the model.
	SetCheckpointPolicy(ctx context.Context, accountID, modelID string, p *CheckpointPolicy) (*Model, error)
	// MarkCheckpointServed records that a chat completion uses the
	// checkpoint now, so retention keeps it for a while.
	MarkCheckpointServed(ctx context.Context, checkpointID string, at time.Time) error
	// PruneCheckpoints locks the model's checkpoints, asks choose which
	// steps to delete, deletes them (never the newest) and returns the
	// deleted rows; their objects are the caller's to delete.
	PruneCheckpoints(ctx context.Context, modelID string, choose PruneChoice) ([]*Checkpoint, error)
}
