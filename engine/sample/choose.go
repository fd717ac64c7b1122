package sample

import (
	"math"
	"slices"

	"github.com/trainyard/trainyard/engine/linalg"
)

// choose picks the next token from s.logits; it also returns the untempered log-probabilities (a buffer of
// s's, valid until the next choose): every one where p asks for top log-probabilities or a greedy choice,
// else the chosen token's alone.
//
// Over a vocabulary of 150,000 tokens this is per token what a decoding row's share of the matrix products
// is, so it takes one pass of vectorised exponentials (linalg.ExpSum) where it can: the weights
// exp(logit − max) of the softmax at temperature 1 are also the sampling weights at temperature 1, and sampling without top-k or top-p walks
// them in id order instead of sorting the vocabulary. Only top-k and top-p need an order, and only of the
// most likely tokens (see candidates).
func (s *state) choose(p Params) (int, []float32) {
	V := len(s.logits)
	s.lp = grow(s.lp, V)
	s.w = grow(s.w, V)
	lp, w := s.lp, s.w
	mx := linalg.Max(s.logits)
	sum := float64(linalg.ExpSum(w, s.logits, mx))
	lse := mx + float32(math.Log(sum))
	// Every log-probability only for the top ones or a greedy choice; otherwise the chosen token's alone
	// (below): a scalar pass over the vocabulary was 2% of a rollout's time.
	full := p.TopLogprobs > 0 || p.Temperature == 0
	if full {
		for i, v := range s.logits {
			lp[i] = v - lse
		}
	}
	id := -1
	if p.Temperature > 0 && p.TopK <= 0 && (p.TopP <= 0 || p.TopP >= 1) {
		if ban, ok := s.con.(Banner); ok {
			// A few banned ids: their weights are taken out of the sum instead of a mask being built over
			// the vocabulary and applied (two passes over it a token, 5% of an ignore_eos rollout's time).
			if p.Temperature != 1 {
				sum = expShifted(w, s.logits, mx, p.Temperature)
			}
			for _, b := range ban.Banned() {
				if b >= 0 && b < V {
					sum -= float64(w[b])
					w[b] = 0
				}
			}
			if sum > 0 {
				id = s.draw(w, sum, p, nil)
			}
			// Otherwise every other id's weight underflowed: the mask's path below picks the first allowed one.
		}
	}
	if id < 0 {
		allowed := s.allowed(V)
		if p.Temperature == 0 {
			id = argmax(lp, allowed)
		} else {
			if p.Temperature != 1 {
				sum = expShifted(w, s.logits, mx, p.Temperature)
			}
			if allowed != nil {
				sum = -1 // the sum over the allowed ids is another
			}
			id = s.draw(w, sum, p, allowed)
		}
	}
	if !full {
		lp[id] = s.logits[id] - lse
	}
	if s.con != nil {
		s.con.Advance(id)
	}
	return id, lp
}

// drawBlock is how many ids draw passes at once by their sum.
const drawBlock = 512

// blockSum is the sum of w's block of ids from i0 (shorter at the end), vectorised.
func blockSum(w []float32, i0 int) float64 {
	blk := w[i0:min(i0+drawBlock, len(w))]
	return float64(linalg.Dot(blk, onesBlock[:len(blk)]))
}

var onesBlock = func() (o [drawBlock]float32) {
	for i := range o {
		o[i] = 1
	}
	return o
}()

// draw samples an id with probability proportional to w (among the allowed ids, when allowed is not nil),
// restricted by top-k and top-p to the most likely ids. total is the sum of w over the allowed ids, or
// negative when not known.
func (s *state) draw(w []float32, total float64, p Params, allowed []bool) int {
	topK := p.TopK > 0
	topP := p.TopP > 0 && p.TopP < 1
	if !topK && !topP {
		if allowed != nil {
			// The ids a constraint rules out (ignore_eos: the stop tokens) weigh nothing; w is the caller's
			// scratch.
			for i, ok := range allowed {
				if !ok {
					w[i] = 0
				}
			}
			total = -1
		}
		var sums []float64 // the blocks' sums, where the total is added up here: the walk below reuses them
		if total < 0 {
			s.sums, total = s.sums[:0], 0
			for i0 := 0; i0 < len(w); i0 += drawBlock {
				b := blockSum(w, i0)
				s.sums = append(s.sums, b)
				total += b
			}
			sums = s.sums
		}
		if total <= 0 { // every allowed id's weight underflowed: the first of them
			for i := range w {
				if allowed == nil || allowed[i] {
					return i
				}
			}
		}
		u := s.rng.Float64() * total
		// Whole blocks of ids are passed by their vectorised sums; the walk one id at a time, a chain of
		// float64 subtractions, took 100 µs a token over Qwen3's vocabulary (3% of rollouts).
		i0 := 0
		for blk := 0; i0+drawBlock <= len(w); blk, i0 = blk+1, i0+drawBlock {
			var b float64
			if sums != nil {
				b = sums[blk]
			} else {
				b = blockSum(w, i0)
			}
			if u <= b {
				break
			}
			u -= b
		}
		for i := i0; i < len(w); i++ {
			if w[i] == 0 {
				continue
			}
			if u -= float64(w[i]); u <= 0 {
				return i
			}
		}
		for i := len(w) - 1; ; i-- { // rounding left u above 0 past every id: the last with weight
			if w[i] > 0 {
				return i
			}
		}
	}
	order := s.candidates(w, p, allowed)
	total = 0
	for _, id := range order {
		total += float64(w[id])
	}
	u := s.rng.Float64() * total
	for _, id := range order {
		if u -= float64(w[id]); u <= 0 {
			return id
		}
	}
	return order[len(order)-1]
}

// candidates returns the ids top-k and top-p keep, most likely first (ties by lower id): the k most likely,
// cut after the first whose cumulative weight reaches top_p of the mass of all the allowed ids. It orders
// only the ids whose weight is within a factor of the largest, lowering that bound until the ids above it
// are enough (k of them, or top_p of the mass): every id left out is less likely than every id kept, so
// the result is the one of ordering the whole vocabulary.
func (s *state) candidates(w []float32, p Params, allowed []bool) []int {
	var mass float64
	n := 0
	for i, x := range w {
		if allowed == nil || allowed[i] {
			mass += float64(x)
			n++
		}
	}
	k := n
	if p.TopK > 0 && p.TopK < n {
		k = p.TopK
	}
	target := math.Inf(1)
	if p.TopP > 0 && p.TopP < 1 {
		target = float64(p.TopP) * mass
	}
	var hi float32
	for i, x := range w {
		if allowed == nil || allowed[i] {
			hi = max(hi, x)
		}
	}
	for bound := hi * 1e-3; ; bound *= 1e-3 {
		if bound < math.SmallestNonzeroFloat32*1e3 {
			bound = 0 // every allowed id
		}
		s.keys = s.keys[:0]
		var kept float64
		for i, x := range w {
			if (allowed == nil || allowed[i]) && (bound == 0 || x >= bound) {
				s.keys = append(s.keys, uint64(^orderedBits(s.logits[i]))<<32|uint64(uint32(i)))
				kept += float64(x)
			}
		}
		if len(s.keys) < k && kept < target && bound > 0 {
			continue
		}
		slices.Sort(s.keys)
		keep := min(k, len(s.keys))
		var cum float64
		for i := 0; i < keep; i++ {
			cum += float64(w[uint32(s.keys[i])])
			if cum >= target {
				keep = i + 1
				break
			}
		}
		if keep == len(s.keys) && keep < k && cum < target && bound > 0 {
			continue // the cut may fall among the ids left out
		}
		s.order = s.order[:0]
		for _, key := range s.keys[:keep] {
			s.order = append(s.order, int(uint32(key)))
		}
		return s.order
	}
}

// expShifted sets w[i] = exp((x[i] − mx) / temperature) and returns their sum. mx is the largest x, so
// every exponent is at most 0.
func expShifted(w, x []float32, mx, temperature float32) float64 {
	inv := 1 / temperature
	for i, v := range x {
		w[i] = v * inv
	}
	return float64(linalg.ExpSum(w, w, mx*inv))
}

// grow returns buf with length n, reusing its memory when large enough.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}
