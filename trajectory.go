package trainyard

import (
	"context"
	"encoding/json"
	"time"
)

// Trajectory is one rollout: the conversation (with sampled Choices) and the
// reward it earned. Only the fields trainyard computes with are typed; the
// raw object is stored as received.
type Trajectory struct {
	MessagesAndChoices   []MessageOrChoice `json:"messages_and_choices"`
	Tools                []Tool            `json:"tools"`
	AdditionalHistories  []History         `json:"additional_histories"`
	Reward               float64           `json:"reward"`
	InitialPolicyVersion *int              `json:"initial_policy_version"`
	FinalPolicyVersion   *int              `json:"final_policy_version"`
	Metrics              map[string]any    `json:"metrics"`
	Metadata             map[string]any    `json:"metadata"`
	Logs                 []string          `json:"logs"`
}

// MaxAbsReward bounds a trajectory's reward: rewards are averaged, squared
// for their spread and scaled into advantages, which must stay finite. No
// reward a scorer writes comes near it.
const MaxAbsReward = 1e6

// History is an additional conversation that belongs to a trajectory and is
// trained with the same reward.
type History struct {
	MessagesAndChoices []MessageOrChoice `json:"messages_and_choices"`
	Tools              []Tool            `json:"tools"`
}

// TrajectoryGroup is a set of rollouts of the same prompt; RL advantages are
// computed relative to the group.
type TrajectoryGroup struct {
	Trajectories []Trajectory `json:"trajectories"`
}

// LogRecord is one call of the log endpoint: the trajectories of a split at
// the model's current step, and the metrics computed from them.
type LogRecord struct {
	ID              string
	ModelID         string
	Split           string
	Step            int // the model's latest checkpoint step when logged (0: base)
	Metrics         map[string]float64
	NumGroups       int
	NumTrajectories int
	CreatedAt       time.Time
}

// StoredTrajectory is one trajectory row of a log record. Body is the
// trajectory's JSON exactly as the client sent it, unknown fields included.
type StoredTrajectory struct {
	GroupIndex int
	Index      int
	Reward     float64
	Body       json.RawMessage
}

// LogStore persists logged trajectories.
type LogStore interface {
	// SaveLog stores rec (filling ID, CreatedAt) and its trajectories in one
	// transaction, and merges rec.Metrics into the checkpoint at rec.Step
	// when it exists.
	SaveLog(ctx context.Context, rec *LogRecord, trajectories []StoredTrajectory) error
	// ListLogs returns a model's log records, oldest first.
	ListLogs(ctx context.Context, modelID string, opts ListOptions) (*Page[*LogRecord], error)
	// ListTrajectories returns the trajectories of one log record in order.
	ListTrajectories(ctx context.Context, logID string) ([]StoredTrajectory, error)
}
