// Package retention applies a model's checkpoint policy: it deletes the
// checkpoints the policy does not keep, rows first and then their objects,
// and sweeps objects that an interrupted deletion left without a row. The
// training workflow runs it as an activity after every job; the API runs it
// when a policy is set.
//
// What is never deleted: the newest checkpoint (the next job starts from
// it), a checkpoint another model was forked from (its provenance), and a
// checkpoint being served, meaning one a chat completion used within
// Pruner.ServedWindow (marked in the database when a request resolves it,
// so every API process sees every other's requests, and a window far longer
// than a request lasts also covers the requests still in flight).
package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/trainyard/trainyard"
)

// DefaultServedWindow is how long a checkpoint stays "being served" after a
// chat completion last used it, when Pruner.ServedWindow is zero.
const DefaultServedWindow = 10 * time.Minute

// Pruner applies checkpoint policies over the stores.
type Pruner struct {
	Models trainyard.ModelStore
	Blobs  trainyard.BlobStore
	// ServedWindow: a checkpoint served within it is kept
	// (DefaultServedWindow when zero).
	ServedWindow time.Duration
}

// Result is what one application of a policy removed.
type Result struct {
	// Deleted are the steps whose rows and objects were deleted.
	Deleted []int
	// Swept are steps whose objects were left behind by an earlier,
	// interrupted deletion and are now gone too.
	Swept []int
}

// Apply deletes the checkpoints of m that its policy does not keep (none
// without a policy), then sweeps orphaned objects. It is idempotent: run
// again after a failure, it finishes what the first run started.
func (p *Pruner) Apply(ctx context.Context, m *trainyard.Model) (*Result, error) {
	res := &Result{}
	if pol := m.CheckpointPolicy; pol != nil {
		window := p.ServedWindow
		if window <= 0 {
			window = DefaultServedWindow
		}
		since := time.Now().Add(-window)
		deleted, err := p.Models.PruneCheckpoints(ctx, m.ID, func(all []trainyard.CheckpointUsage) []int {
			return pol.Prune(all, since)
		})
		if err != nil {
			return nil, fmt.Errorf("prune the checkpoints of model %s: %w", m.ID, err)
		}
		for _, c := range deleted {
			if err := p.Blobs.DeleteCheckpointFiles(ctx, m.ID, c.Step); err != nil {
				return nil, fmt.Errorf("delete the objects of checkpoint %d of model %s: %w", c.Step, m.ID, err)
			}
			res.Deleted = append(res.Deleted, c.Step)
		}
	}
	swept, err := p.sweep(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	res.Swept = swept
	return res, nil
}

// sweep deletes the objects of steps below the newest checkpoint that have
// no row: a deletion interrupted between its rows and its objects. Steps
// above the newest are left alone, since a running job writes its
// checkpoint's objects before the row.
func (p *Pruner) sweep(ctx context.Context, modelID string) ([]int, error) {
	stored, err := p.Blobs.CheckpointSteps(ctx, modelID)
	if err != nil || len(stored) == 0 {
		return nil, err
	}
	rows := map[int]bool{}
	newest := -1
	opts := trainyard.ListOptions{Limit: trainyard.MaxPageLimit, Order: trainyard.OrderAsc}
	for {
		page, err := p.Models.ListCheckpoints(ctx, modelID, opts)
		if err != nil {
			return nil, fmt.Errorf("list the checkpoints of model %s: %w", modelID, err)
		}
		for _, c := range page.Items {
			rows[c.Step] = true
			newest = max(newest, c.Step)
		}
		if !page.HasMore || len(page.Items) == 0 {
			break
		}
		opts.After = page.Items[len(page.Items)-1].ID
	}
	var swept []int
	for _, s := range stored {
		if s < newest && !rows[s] {
			if err := p.Blobs.DeleteCheckpointFiles(ctx, modelID, s); err != nil {
				return nil, fmt.Errorf("delete the orphaned objects of step %d of model %s: %w", s, modelID, err)
			}
			swept = append(swept, s)
		}
	}
	return swept, nil
}
