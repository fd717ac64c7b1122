package trainyard

import (
	"math"
	"sort"
)

// LogMetrics computes the metrics of one logged split, keyed "<split>/<name>":
// reward (mean), reward_std_dev (population standard deviation over all
// trajectories), the mean within-group standard deviation
// (reward_std_dev_within_group, the signal RL can use), counts, and the mean
// of every numeric or boolean key in the trajectories' metrics (booleans
// count as 0/1; a key missing from a trajectory is averaged over the ones that
// have it).
func LogMetrics(split string, groups []TrajectoryGroup) map[string]float64 {
	out := map[string]float64{}
	var rewards []float64
	var withinStd float64
	var groupsWithTwo int
	sums := map[string]float64{}
	counts := map[string]int{}
	for _, g := range groups {
		var gr []float64
		for _, t := range g.Trajectories {
			gr = append(gr, t.Reward)
			for k, v := range t.Metrics {
				if f, ok := metricValue(v); ok {
					sums[k] += f
					counts[k]++
				}
			}
		}
		rewards = append(rewards, gr...)
		if len(gr) >= 2 {
			_, sd := meanStd(gr)
			withinStd += sd
			groupsWithTwo++
		}
	}
	p := split + "/"
	out[p+"num_groups"] = float64(len(groups))
	out[p+"num_trajectories"] = float64(len(rewards))
	if len(rewards) > 0 {
		m, sd := meanStd(rewards)
		out[p+"reward"] = m
		out[p+"reward_std_dev"] = sd
	}
	if groupsWithTwo > 0 {
		out[p+"reward_std_dev_within_group"] = withinStd / float64(groupsWithTwo)
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "reward" {
			continue // the trajectory reward is authoritative
		}
		out[p+k] = sums[k] / float64(counts[k])
	}
	return out
}

func metricValue(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func meanStd(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)))
}

// FirstNonFinite returns the smallest key of m whose value is NaN or ±Inf, so
// that the same metrics always name the same culprit in an error message.
func FirstNonFinite(m map[string]float64) (key string, v float64, ok bool) {
	for k, x := range m {
		if (math.IsNaN(x) || math.IsInf(x, 0)) && (!ok || k < key) {
			key, v, ok = k, x, true
		}
	}
	return key, v, ok
}
