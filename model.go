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
}

// Checkpoint is one trained state of a model. Step 1 is the first training
// step; there is no checkpoint for step 0 (the base model). The row is written
// only after its objects are in the blob store, so a listed checkpoint is
// always loadable.
type Checkpoint struct {
	ID        string
	ModelID   string
	Step      int
	JobID     *string
	Metrics   map[string]float64
	CreatedAt time.Time
}

// ModelStore persists models and their checkpoints. Every method is scoped to
// an account; a model of another account is ENOTFOUND.
type ModelStore interface {
	// CreateModel inserts m, filling ID and CreatedAt; ECONFLICT when the
	// account already has a model with that entity/project/name.
	CreateModel(ctx context.Context, m *Model) error
	// FindModel returns the account's model by id.
	FindModel(ctx context.Context, accountID, modelID string) (*Model, error)
	// FindModelByName returns the account's model by entity/project/name.
	FindModelByName(ctx context.Context, accountID, entity, project, name string) (*Model, error)
	// DeleteModel removes the model with its checkpoints, logs and jobs' rows
	// and returns the checkpoints that were removed, so their objects can go.
	DeleteModel(ctx context.Context, accountID, modelID string) ([]*Checkpoint, error)

	// CreateCheckpoint records a checkpoint, filling ID and CreatedAt. It is
	// idempotent on (model, step): a second call returns the existing row.
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
}
