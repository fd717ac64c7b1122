package trainyard

import (
	"context"
	"time"
)

// InferenceProcess is a `trainyard infer` process as the inference registry
// records it: where it listens, what it holds and how busy it is. The API
// routes chat completions to live, non-draining processes that hold the
// requested base model.
type InferenceProcess struct {
	// ID is chosen by the process at start (a UUIDv7); a restarted process
	// is a new one.
	ID string
	// Address is the base URL other processes reach it at (http://host:port).
	Address string
	// BaseModels are the base models it serves, with their adapters.
	BaseModels []string
	// InFlight is its generations in flight, Capacity the most it admits
	// (past it, it answers 429), both as of its last heartbeat.
	InFlight, Capacity int
	// Draining is set while it shuts down: it finishes what it has and takes
	// nothing new.
	Draining bool
	// StartedAt is when it first registered; HeartbeatAt its last heartbeat
	// (both by the database's clock).
	StartedAt, HeartbeatAt time.Time
	// Live reports, by the database's clock when the row was read, that its
	// lease (renewed by each heartbeat) has not expired.
	Live bool
}

// Holds reports whether p serves the base model.
func (p *InferenceProcess) Holds(base string) bool {
	for _, b := range p.BaseModels {
		if b == base {
			return true
		}
	}
	return false
}

// InferenceRegistry is where inference processes announce themselves and
// the API looks them up. Every time in it comes from the database's clock,
// so processes on hosts whose clocks disagree still agree on liveness.
type InferenceRegistry interface {
	// HeartbeatInference records p (inserting its row the first time,
	// updating address, models, load and draining after) and renews its
	// lease until lease from now.
	HeartbeatInference(ctx context.Context, p *InferenceProcess, lease time.Duration) error
	// DeregisterInference removes the process's row; a missing row is fine.
	DeregisterInference(ctx context.Context, id string) error
	// ListInference returns every registered process, Live computed now.
	ListInference(ctx context.Context) ([]*InferenceProcess, error)
	// PruneInference deletes the rows whose lease expired more than age
	// ago (processes that died without deregistering) and returns how many.
	PruneInference(ctx context.Context, age time.Duration) (int, error)
}
