package linalg

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestAttend holds AttendScores and AttendWeigh, on this CPU's path and on Sgemm's, to sums in float64: head
// sizes with and without whole vectors (8, 64), key counts around the kernels' blocks of 8 and 2, one and
// several strided rows; each value within float32's rounding of the sum of its terms' magnitudes, and
// nothing past the rows' values written.
func TestAttend(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type impl struct {
		name   string
		scores func(q []float32, ldq, rows int, k []float32, hd, n int, scale float32, s []float32, lds int)
		weigh  func(w []float32, ldw, rows int, v []float32, hd, n int, out []float32, ldo int, add bool)
	}
	impls := []impl{{"cpu", attScores, attWeigh}, {"sgemm", attendScoresSgemm, attendWeighSgemm}}
	for _, im := range impls {
		for _, hd := range []int{4, 8, 24, 64, 72, 128, 256} {
			for _, rows := range []int{1, 3, 7} {
				for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 17, 100, 333} {
					t.Run(fmt.Sprintf("%s/hd%d/rows%d/n%d", im.name, hd, rows, n), func(t *testing.T) {
						s, w := attScores, attWeigh
						defer func() { attScores, attWeigh = s, w }()
						attScores, attWeigh = im.scores, im.weigh
						testAttend(t, rng, hd, rows, n)
					})
				}
			}
		}
	}
}

func testAttend(t *testing.T, rng *rand.Rand, hd, rows, n int) {
	ldq, lds, ldo := hd+5, n+3, hd+7 // strides past the rows' values, which must stay as they were
	q, k, v := randVec(rng, rows*ldq), randVec(rng, n*hd), randVec(rng, n*hd)
	s := randVec(rng, rows*lds)
	before := append([]float32(nil), s...)
	const scale = 0.125
	AttendScores(q, ldq, rows, k, hd, n, scale, s, lds)
	for i := range rows {
		for j := range lds {
			if j >= n {
				if s[i*lds+j] != before[i*lds+j] {
					t.Fatalf("row %d: score %d past the keys written", i, j)
				}
				continue
			}
			var want, mag float64
			for c := range hd {
				p := float64(q[i*ldq+c]) * float64(k[j*hd+c])
				want, mag = want+p, mag+math.Abs(p)
			}
			if d := math.Abs(float64(s[i*lds+j]) - want*scale); d > 1e-6*mag*scale {
				t.Fatalf("row %d score %d: %g, want %g", i, j, s[i*lds+j], want*scale)
			}
		}
	}
	for _, add := range []bool{false, true} {
		out := randVec(rng, rows*ldo)
		before := append([]float32(nil), out...)
		AttendWeigh(s, lds, rows, v, hd, n, out, ldo, add)
		for i := range rows {
			for c := range ldo {
				got := out[i*ldo+c]
				if c >= hd {
					if got != before[i*ldo+c] {
						t.Fatalf("add %v row %d: value %d past the head written", add, i, c)
					}
					continue
				}
				var want, mag float64
				if add {
					want, mag = float64(before[i*ldo+c]), math.Abs(float64(before[i*ldo+c]))
				}
				for j := range n {
					p := float64(s[i*lds+j]) * float64(v[j*hd+c])
					want, mag = want+p, mag+math.Abs(p)
				}
				if d := math.Abs(float64(got) - want); d > 1e-6*mag {
					t.Fatalf("add %v row %d column %d: %g, want %g", add, i, c, got, want)
				}
			}
		}
	}
}

// BenchmarkAttend times this CPU's AttendScores and AttendWeigh against Sgemm's few-row path for a decoding
// step's G query rows of one key/value head (3 at SmolLM2's shape, 7 at Qwen2.5-0.5B's) over a chunk of 64
// keys of 64 values in L1, as engine/model walks a run of them (attendChunk).
func BenchmarkAttend(b *testing.B) {
	const hd, n, lds = 64, 64, 256
	rng := rand.New(rand.NewSource(1))
	q, k, v := randVec(rng, 8*hd), randVec(rng, n*hd), randVec(rng, n*hd)
	s, out := make([]float32, 8*lds), make([]float32, 8*hd)
	for _, G := range []int{3, 7} {
		for _, im := range []struct {
			name   string
			scores func(q []float32, ldq, rows int, k []float32, hd, n int, scale float32, s []float32, lds int)
			weigh  func(w []float32, ldw, rows int, v []float32, hd, n int, out []float32, ldo int, add bool)
		}{{"cpu", attScores, attWeigh}, {"sgemm", attendScoresSgemm, attendWeighSgemm}} {
			b.Run(fmt.Sprintf("scores/rows%d/%s", G, im.name), func(b *testing.B) {
				for range b.N {
					im.scores(q, hd, G, k, hd, n, 0.125, s, lds)
				}
			})
			b.Run(fmt.Sprintf("weigh/rows%d/%s", G, im.name), func(b *testing.B) {
				for range b.N {
					im.weigh(s, lds, G, v, hd, n, out, hd, true)
				}
			})
		}
	}
}
