package linalg

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestAttend holds AttendScores and AttendWeigh, on this CPU's kernels and on the portable loops, to sums in
// float64 over head sizes with and without whole vectors (8, 64) and key counts around the kernels' blocks
// of 8 and 2; each value within float32's rounding of the sum of its terms' magnitudes.
func TestAttend(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type impl struct {
		name   string
		scores func(q, k []float32, hd, n int, scale float32, s []float32)
		weigh  func(w, v []float32, hd, n int, out []float32, add bool)
	}
	impls := []impl{{"cpu", attScores, attWeigh}, {"generic", attendScoresGeneric, attendWeighGeneric}}
	for _, im := range impls {
		for _, hd := range []int{4, 8, 24, 64, 72, 128, 256} {
			for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 100, 333} {
				t.Run(fmt.Sprintf("%s/hd%d/n%d", im.name, hd, n), func(t *testing.T) {
					defer func(s func(q, k []float32, hd, n int, scale float32, s []float32), w func(w, v []float32, hd, n int, out []float32, add bool)) {
						attScores, attWeigh = s, w
					}(attScores, attWeigh)
					attScores, attWeigh = im.scores, im.weigh
					q, k, v := randVec(rng, hd), randVec(rng, n*hd+hd), randVec(rng, n*hd+hd)
					s := make([]float32, n+1)
					s[n] = 42 // past the keys: untouched
					const scale = 0.125
					AttendScores(q, k, hd, n, scale, s)
					for i := range n {
						var want, mag float64
						for c := range hd {
							want += float64(q[c]) * float64(k[i*hd+c])
							mag += math.Abs(float64(q[c]) * float64(k[i*hd+c]))
						}
						want *= scale
						if d := math.Abs(float64(s[i]) - want); d > 1e-6*mag*scale+1e-30 {
							t.Fatalf("score %d: %g, want %g", i, s[i], want)
						}
					}
					if s[n] != 42 {
						t.Fatalf("score past the keys written: %g", s[n])
					}
					w := randVec(rng, n)
					for _, add := range []bool{false, true} {
						out := randVec(rng, hd+1)
						before := append([]float32(nil), out...)
						AttendWeigh(w, v, hd, n, out, add)
						for c := range hd {
							var want, mag float64
							if add {
								want, mag = float64(before[c]), math.Abs(float64(before[c]))
							}
							for i := range n {
								want += float64(w[i]) * float64(v[i*hd+c])
								mag += math.Abs(float64(w[i]) * float64(v[i*hd+c]))
							}
							if d := math.Abs(float64(out[c]) - want); d > 1e-6*mag+1e-30 {
								t.Fatalf("add %v, column %d: %g, want %g", add, c, out[c], want)
							}
						}
						if out[hd] != before[hd] {
							t.Fatalf("add %v: value past the head written", add)
						}
					}
				})
			}
		}
	}
}
