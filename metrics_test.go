package trainyard

import (
	"math"
	"testing"
)

func TestLogMetrics(t *testing.T) {
	groups := []TrajectoryGroup{
		{Trajectories: []Trajectory{
			{Reward: 1, Metrics: map[string]any{"correct": true, "len": 4.0}},
			{Reward: 0, Metrics: map[string]any{"correct": false}},
		}},
		{Trajectories: []Trajectory{
			{Reward: 0.5, Metrics: map[string]any{"len": 2.0, "reward": 99.0, "bad": math.NaN()}},
		}},
	}
	got := LogMetrics("val", groups)
	want := map[string]float64{
		"val/num_groups":                  2,
		"val/num_trajectories":            3,
		"val/reward":                      0.5,
		"val/reward_std_dev":              math.Sqrt((0.25 + 0.25 + 0) / 3),
		"val/reward_std_dev_within_group": 0.5, // only the first group has two rewards
		"val/correct":                     0.5,
		"val/len":                         3,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d metrics %v, want %d", len(got), got, len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-12 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
}

func TestLogMetricsEmpty(t *testing.T) {
	got := LogMetrics("train", nil)
	if got["train/num_groups"] != 0 || got["train/num_trajectories"] != 0 {
		t.Fatalf("counts: %v", got)
	}
	if _, ok := got["train/reward"]; ok {
		t.Fatalf("no trajectories must mean no reward metric, got %v", got)
	}
}

func TestFirstNonFinite(t *testing.T) {
	if _, _, bad := FirstNonFinite(map[string]float64{"a": 1, "b": -2}); bad {
		t.Fatal("finite metrics reported")
	}
	if _, _, bad := FirstNonFinite(nil); bad {
		t.Fatal("nil map reported")
	}
	m := map[string]float64{"z": math.NaN(), "reward_std_dev_within_group": math.Inf(1), "reward_std_dev": math.Inf(1), "a": 0}
	for range 20 { // map order varies between iterations; the answer must not
		if k, v, bad := FirstNonFinite(m); !bad || k != "reward_std_dev" || !math.IsInf(v, 1) {
			t.Fatalf("FirstNonFinite = %q, %v, %v; want reward_std_dev, +Inf, true", k, v, bad)
		}
	}
}
