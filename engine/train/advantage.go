package train

import "math"

// Advantages computes group-relative advantages. For a group with rewards r_1..r_n:
//
//	A_i = r_i − mean(r)                         (scaleRewards=false)
//	A_i = (r_i − mean(r)) / std(r)              (scaleRewards=true; population std)
//
// A group whose rewards are all equal (std = 0, including a group of one) carries no signal: all its
// advantages are 0. advantageBalance b ∈ [−1, 1] then reweights the two signs: positive advantages are
// multiplied by (1 + b) and negative ones by (1 − b), so b = 1 trains only on better-than-average samples,
// b = −1 only on worse ones, and b = 0 leaves them balanced.
func Advantages(groups [][]float64, scaleRewards bool, advantageBalance float64) [][]float64 {
	out := make([][]float64, len(groups))
	for g, rs := range groups {
		out[g] = make([]float64, len(rs))
		if len(rs) < 2 {
			continue
		}
		var mean float64
		for _, r := range rs {
			mean += r
		}
		mean /= float64(len(rs))
		var varSum float64
		for _, r := range rs {
			varSum += (r - mean) * (r - mean)
		}
		std := math.Sqrt(varSum / float64(len(rs)))
		if std < 1e-12 {
			continue
		}
		for i, r := range rs {
			a := r - mean
			if scaleRewards {
				a /= std
			}
			if a > 0 {
				a *= 1 + advantageBalance
			} else {
				a *= 1 - advantageBalance
			}
			out[g][i] = a
		}
	}
	return out
}
