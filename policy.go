package trainyard

import (
	"fmt"
	"math"
	"time"
)

// CheckpointPolicy says which checkpoints of a model retention keeps (ART's
// delete_checkpoints(best_checkpoint_metric) generalised): the KeepLast
// newest and, with KeepBestBy, the best by a metric. Whatever the policy,
// the newest checkpoint, a checkpoint another model was forked from and a
// checkpoint being served are kept. A model without a policy keeps every
// checkpoint.
type CheckpointPolicy struct {
	// KeepLast is how many of the newest checkpoints stay (at least 1).
	KeepLast int `json:"keep_last"`
	// KeepBestBy, when set, also keeps the best checkpoint by a metric.
	KeepBestBy *MetricGoal `json:"keep_best_by"`
}

// MetricGoal names a checkpoint metric and which way is better.
type MetricGoal struct {
	// Metric is a key of the checkpoints' metrics, e.g. "val/reward".
	Metric string `json:"metric"`
	// Direction is DirectionMax (higher is better) or DirectionMin.
	Direction string `json:"direction"`
}

// Directions of a MetricGoal.
const (
	DirectionMax = "max"
	DirectionMin = "min"
)

// MaxKeepLast bounds CheckpointPolicy.KeepLast.
const MaxKeepLast = 1_000_000

// Validate reports what makes the policy unusable, in words for the user.
func (p CheckpointPolicy) Validate() error {
	if p.KeepLast < 1 || p.KeepLast > MaxKeepLast {
		return Errorf(EINVALID, "keep_last must be between 1 and %d, got %d", MaxKeepLast, p.KeepLast)
	}
	if g := p.KeepBestBy; g != nil {
		if g.Metric == "" {
			return Errorf(EINVALID, "keep_best_by.metric must name a checkpoint metric")
		}
		if g.Direction != DirectionMax && g.Direction != DirectionMin {
			return Errorf(EINVALID, "keep_best_by.direction must be %q or %q, got %q", DirectionMax, DirectionMin, g.Direction)
		}
	}
	return nil
}

// CheckpointUsage is a checkpoint with what retention must know about its
// use besides its metrics.
type CheckpointUsage struct {
	Checkpoint *Checkpoint
	// ForkSource is set when another model was forked from it.
	ForkSource bool
	// LastServed is when a chat completion last used it (zero: never).
	LastServed time.Time
}

// PruneChoice picks, from every checkpoint of a model (ordered by step),
// the steps to delete. PruneCheckpoints calls it with the rows locked.
type PruneChoice func(all []CheckpointUsage) (deleteSteps []int)

// Prune applies the policy to a model's checkpoints (ordered by step) and
// returns the steps to delete: every checkpoint that is not among the
// KeepLast newest, not the best by KeepBestBy (ties go to the newer step;
// checkpoints without the metric or with a non-finite value never rank), not
// a fork's source and not served since servedSince. The newest is always
// kept.
func (p CheckpointPolicy) Prune(all []CheckpointUsage, servedSince time.Time) []int {
	keep := make(map[int]bool, len(all))
	for i := len(all) - 1; i >= 0 && i >= len(all)-max(p.KeepLast, 1); i-- {
		keep[all[i].Checkpoint.Step] = true
	}
	if g := p.KeepBestBy; g != nil {
		best, found := 0, false
		var bestV float64
		for _, c := range all {
			v, ok := c.Checkpoint.Metrics[g.Metric]
			if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			better := v > bestV
			if g.Direction == DirectionMin {
				better = v < bestV
			}
			if !found || better || v == bestV {
				best, bestV, found = c.Checkpoint.Step, v, true
			}
		}
		if found {
			keep[best] = true
		}
	}
	var out []int
	for _, c := range all {
		s := c.Checkpoint.Step
		if keep[s] || c.ForkSource || (!c.LastServed.IsZero() && !c.LastServed.Before(servedSince)) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// String describes the policy for logs and messages.
func (p CheckpointPolicy) String() string {
	s := fmt.Sprintf("keep the last %d", p.KeepLast)
	if g := p.KeepBestBy; g != nil {
		s += fmt.Sprintf(" and the best by %s (%s)", g.Metric, g.Direction)
	}
	return s
}
