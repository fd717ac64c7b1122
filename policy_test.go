package trainyard

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func usages(metric string, values map[int]float64, steps ...int) []CheckpointUsage {
	out := make([]CheckpointUsage, len(steps))
	for i, s := range steps {
		m := map[string]float64{"train/loss": 1}
		if v, ok := values[s]; ok {
			m[metric] = v
		}
		out[i] = CheckpointUsage{Checkpoint: &Checkpoint{Step: s, Metrics: m}}
	}
	return out
}

// TestPrune: keep_last keeps the newest N, keep_best_by the best by its
// metric in its direction (ties to the newer step; checkpoints without the
// metric or with a non-finite value never win), as ART's
// delete_checkpoints(best_checkpoint_metric) keeps the latest and the best;
// a fork's source and a checkpoint served within the window always stay.
func TestPrune(t *testing.T) {
	now := time.Now()
	reward := map[int]float64{1: 0.2, 2: 0.9, 3: 0.9, 4: math.NaN(), 5: 0.1}
	for _, c := range []struct {
		name   string
		policy CheckpointPolicy
		edit   func([]CheckpointUsage)
		want   string
	}{
		{"keep last 1", CheckpointPolicy{KeepLast: 1}, nil, "[0 1 2 3 4 5]"},
		{"keep last 3", CheckpointPolicy{KeepLast: 3}, nil, "[0 1 2 3]"},
		{"keep more than there are", CheckpointPolicy{KeepLast: 10}, nil, "[]"},
		{"ART: latest and best", CheckpointPolicy{KeepLast: 1, KeepBestBy: &MetricGoal{"val/reward", DirectionMax}}, nil, "[0 1 2 4 5]"},
		{"lowest wins with min", CheckpointPolicy{KeepLast: 1, KeepBestBy: &MetricGoal{"val/reward", DirectionMin}}, nil, "[0 1 2 3 4]"},
		{"no checkpoint has the metric", CheckpointPolicy{KeepLast: 2, KeepBestBy: &MetricGoal{"val/other", DirectionMax}}, nil, "[0 1 2 3 4]"},
		{"fork source and served stay", CheckpointPolicy{KeepLast: 1}, func(u []CheckpointUsage) {
			u[1].ForkSource = true                       // step 1
			u[2].LastServed = now.Add(-time.Minute)      // step 2: within the window
			u[3].LastServed = now.Add(-20 * time.Minute) // step 3: long ago
		}, "[0 3 4 5]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			all := usages("val/reward", reward, 0, 1, 2, 3, 4, 5, 6)
			if c.edit != nil {
				c.edit(all)
			}
			got := c.policy.Prune(all, now.Add(-10*time.Minute))
			if got == nil {
				got = []int{}
			}
			if fmt.Sprint(got) != c.want {
				t.Fatalf("Prune = %v, want %v", got, c.want)
			}
		})
	}
	if got := (CheckpointPolicy{KeepLast: 1}).Prune(nil, now); len(got) != 0 {
		t.Fatalf("Prune of nothing = %v", got)
	}
}

func TestCheckpointPolicyValidate(t *testing.T) {
	for _, c := range []struct {
		p    CheckpointPolicy
		want string
	}{
		{CheckpointPolicy{KeepLast: 1}, ""},
		{CheckpointPolicy{KeepLast: 0}, "keep_last"},
		{CheckpointPolicy{KeepLast: MaxKeepLast + 1}, "keep_last"},
		{CheckpointPolicy{KeepLast: 1, KeepBestBy: &MetricGoal{"", DirectionMax}}, "metric"},
		{CheckpointPolicy{KeepLast: 1, KeepBestBy: &MetricGoal{"val/reward", "up"}}, "direction"},
	} {
		err := c.p.Validate()
		if (c.want == "") != (err == nil) || (err != nil && ErrorCode(err) != EINVALID) ||
			(err != nil && !strings.Contains(ErrorMessage(err), c.want)) {
			t.Errorf("Validate(%v) = %v, want an error about %q", c.p, err, c.want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}
