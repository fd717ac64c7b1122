package serving

import "testing"

// BenchmarkConstraintAllow measures the per-token cost of computing the allowed-token mask (264 ids)
// in the middle of a JSON string, the common state of a constrained completion.
func BenchmarkConstraintAllow(b *testing.B) {
	m, _ := feedJSON(`{"key":[1,2,{"x":"abc`)
	c := newConstraint(jsonGrammar{m}, 1000, []int{256, 258})
	mask := make([]bool, 264)
	b.ReportAllocs()
	for b.Loop() {
		c.Allow(mask)
	}
}
