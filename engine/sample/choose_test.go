package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCandidatesAreTheWholeOrder: the ids top-k and top-p keep, found by ordering only the likely ids, are
// those of ordering every allowed id, for peaked and flat distributions, with and without a mask.
func TestCandidatesAreTheWholeOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		V := 1 + rng.IntN(3000)
		logits := make([]float32, V)
		spread := []float64{0.01, 1, 4, 30}[trial%4]
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * spread)
			if rng.IntN(10) == 0 {
				logits[i] = logits[rng.IntN(i+1)] // ties
			}
		}
		var allowed []bool
		if trial%3 == 0 {
			allowed = make([]bool, V)
			for i := range allowed {
				allowed[i] = rng.IntN(4) == 0
			}
			allowed[rng.IntN(V)] = true
		}
		p := Params{Temperature: []float32{1, 0.5, 1.7}[trial%3], TopK: []int{0, 1, 5, 40, 5000}[trial%5], TopP: []float32{0, 0.5, 0.9, 0.999, 1}[rng.IntN(5)]}
		if p.TopK == 0 && (p.TopP == 0 || p.TopP == 1) {
			p.TopP = 0.8
		}
		s := &state{logits: logits}
		w := make([]float32, V)
		expShifted(w, logits, slices.Max(logits), p.Temperature)
		got := s.candidates(w, p, allowed)
		if want := wholeOrder(w, logits, p, allowed); !slices.Equal(got, want) {
			t.Fatalf("trial %d (V %d, %+v): candidates %v, want %v", trial, V, p, got, want)
		}
	}
}

// wholeOrder is candidates by ordering every allowed id.
func wholeOrder(w, logits []float32, p Params, allowed []bool) []int {
	var ids []int
	var mass float64
	for i := range w {
		if allowed == nil || allowed[i] {
			ids = append(ids, i)
			mass += float64(w[i])
		}
	}
	slices.SortStableFunc(ids, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return a - b
	})
	keep := len(ids)
	if p.TopK > 0 && p.TopK < keep {
		keep = p.TopK
	}
	if p.TopP > 0 && p.TopP < 1 {
		var cum float64
		for i := 0; i < keep; i++ {
			cum += float64(w[ids[i]])
			if cum >= float64(p.TopP)*mass {
				keep = i + 1
				break
			}
		}
	}
	return ids[:keep]
}

// TestDrawFollowsTheDistribution: draws without top-k or top-p land on each id about as often as its
// probability says.
func TestDrawFollowsTheDistribution(t *testing.T) {
	t.Parallel()
	logits := []float32{0, 1, 2, -1, 0.5}
	s := &state{rng: rand.New(rand.NewPCG(7, 8)), logits: logits}
	const draws = 200000
	counts := make([]int, len(logits))
	for range draws {
		id, _ := s.choose(Params{Temperature: 1})
		counts[id]++
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v))
	}
	for i, v := range logits {
		want := math.Exp(float64(v)) / z
		if got := float64(counts[i]) / draws; math.Abs(got-want) > 0.005 {
			t.Errorf("id %d drawn %.4f of the time, want %.4f", i, got, want)
		}
	}
}

// TestDrawOverAVocabulary: over a vocabulary of thousands of ids, which draw passes in blocks by their sums,
// the ids still come as often as their probabilities say: three likely ones (the last id among them) and
// the first half of the rest.
func TestDrawOverAVocabulary(t *testing.T) {
	t.Parallel()
	logits := make([]float32, 4096)
	logits[700], logits[2100], logits[4095] = 3, 4, 5
	s := &state{rng: rand.New(rand.NewPCG(9, 10)), logits: logits}
	const draws = 200000
	counts := make([]int, len(logits))
	for range draws {
		id, lp := s.choose(Params{Temperature: 1})
		counts[id]++
		if want := float64(logits[id]) - math.Log(4093+math.Exp(3)+math.Exp(4)+math.Exp(5)); math.Abs(float64(lp[id])-want) > 1e-5 {
			t.Fatalf("logprob of id %d %v, want %v", id, lp[id], want)
		}
	}
	z := 4093 + math.Exp(3) + math.Exp(4) + math.Exp(5)
	firstHalf := 0
	for i := range 2048 {
		firstHalf += counts[i]
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"id 700", float64(counts[700]) / draws, math.Exp(3) / z},
		{"id 2100", float64(counts[2100]) / draws, math.Exp(4) / z},
		{"id 4095", float64(counts[4095]) / draws, math.Exp(5) / z},
		{"ids below 2048", float64(firstHalf) / draws, (2047 + math.Exp(3)) / z},
	} {
		if math.Abs(c.got-c.want) > 0.004 {
			t.Errorf("%s drawn %.4f of the time, want %.4f", c.what, c.got, c.want)
		}
	}
}

// forbid is a constraint that rules out a fixed set of ids (as ignore_eos rules out the stop tokens).
type forbid map[int]bool

func (f forbid) Allow(mask []bool) {
	for id := range f {
		mask[id] = false
	}
}

func (forbid) Advance(int) {}

// TestDrawUnderAConstraint: ids a constraint rules out are never drawn, and the others keep their
// probabilities relative to each other.
// Both ways of ruling ids out are checked: a mask (Allow) and a list of banned ids (Banner, ignore_eos's
// path), at temperature 1 and at another.
func TestDrawUnderAConstraint(t *testing.T) {
	t.Parallel()
	for _, con := range []Constraint{forbid{700: true, 4095: true}, banned{700, 4095}} {
		for _, temp := range []float32{1, 0.7} {
			t.Run(fmt.Sprintf("%T/temperature=%g", con, temp), func(t *testing.T) {
				logits := make([]float32, 4096)
				logits[700], logits[2100], logits[4095] = 3, 4, 5
				s := &state{rng: rand.New(rand.NewPCG(11, 12)), logits: logits, con: con}
				const draws = 100000
				counts := make([]int, len(logits))
				for range draws {
					id, lp := s.choose(Params{Temperature: temp})
					counts[id]++
					if want := logits[id] - float32(math.Log(4093+math.Exp(3)+math.Exp(4)+math.Exp(5))); math.Abs(float64(lp[id]-want)) > 1e-5 {
						t.Fatalf("logprob of %d: %g, want the unconstrained model's %g", id, lp[id], want)
					}
				}
				if counts[700] != 0 || counts[4095] != 0 {
					t.Fatalf("ruled-out ids drawn %d and %d times", counts[700], counts[4095])
				}
				e := math.Exp(4 / float64(temp))
				if got, want := float64(counts[2100])/draws, e/(4093+e); math.Abs(got-want) > 0.004 {
					t.Errorf("id 2100 drawn %.4f of the time, want %.4f", got, want)
				}
			})
		}
	}
}

// banned rules out its ids as a Banner.
type banned []int

func (banned) Allow([]bool) {
	panic("a Banner's mask is never asked for when sampling at a temperature")
}
func (banned) Advance(int)     {}
func (b banned) Banned() []int { return b }
