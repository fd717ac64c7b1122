package sample

import (
	"slices"
	"sort"
	"strings"
)

// push appends token id, then ends the completion if its text now contains a stop sequence, and streams
// the tokens that can no longer belong to one.
func (s *state) push(tok Vocab, id int, lp []float32, p Params, onToken func(int, SampledToken)) {
	t := SampledToken{TokenLogprob: TokenLogprob{ID: id, Bytes: tok.TokenBytes(id), Logprob: lp[id]}}
	if p.TopLogprobs > 0 {
		t.Top = topK(tok, lp, p.TopLogprobs)
	}
	s.out = append(s.out, t)
	s.text.Write(t.Bytes)
	s.ends = append(s.ends, s.text.Len())
	text := s.text.String()
	cut := -1
	for _, st := range p.Stop {
		// Only a match that involves the new token is new; search the tail that can contain it.
		from := max(0, len(text)-len(t.Bytes)-len(st)+1)
		if i := strings.Index(text[from:], st); i >= 0 && (cut < 0 || from+i < cut) {
			cut = from + i
		}
	}
	if cut >= 0 {
		// Keep the tokens that end at or before the stop sequence; the text is cut exactly.
		n := sort.SearchInts(s.ends, cut+1)
		s.out, s.ends = s.out[:n], s.ends[:n]
		s.text.Reset()
		s.text.WriteString(text[:cut])
		s.finish("stop", onToken)
		return
	}
	safe := len(text) - heldBack(text, p.Stop)
	for s.emitted < len(s.out) && s.ends[s.emitted] <= safe {
		if onToken != nil {
			onToken(s.idx, s.out[s.emitted])
		}
		s.emitted++
	}
}

// heldBack is the length of the longest suffix of text that is a proper prefix of a stop sequence: those
// bytes may still turn into a stop and are not streamed yet.
func heldBack(text string, stops []string) int {
	best := 0
	for _, st := range stops {
		for n := min(len(st)-1, len(text)); n > best; n-- {
			if strings.HasSuffix(text, st[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// finish ends the completion and streams whatever was held back.
func (s *state) finish(reason string, onToken func(int, SampledToken)) {
	s.done, s.reason = true, reason
	for ; s.emitted < len(s.out); s.emitted++ {
		if onToken != nil {
			onToken(s.idx, s.out[s.emitted])
		}
	}
}

// argmax returns the index of the largest value, among the allowed ones when allowed is not nil.
func argmax(x []float32, allowed []bool) int {
	best := -1
	for i, v := range x {
		if (allowed == nil || allowed[i]) && (best < 0 || v > x[best]) {
			best = i
		}
	}
	return best
}

// topK returns the k most likely tokens, most likely first (ties by lower id). It selects in one pass
// over the vocabulary, keeping the best k in order, rather than sorting all of it.
func topK(tok Vocab, lp []float32, k int) []TokenLogprob {
	k = min(k, len(lp))
	if k <= 0 {
		return nil
	}
	best := make([]int, 0, k+1)
	for id, v := range lp {
		if len(best) == k && !(v > lp[best[k-1]]) {
			continue
		}
		// Insert after every kept id at least as likely: ids come in ascending order, so ties keep the lower id first.
		at := len(best)
		for at > 0 && v > lp[best[at-1]] {
			at--
		}
		best = slices.Insert(best, at, id)
		if len(best) > k {
			best = best[:k]
		}
	}
	out := make([]TokenLogprob, len(best))
	for i, id := range best {
		out[i] = TokenLogprob{ID: id, Bytes: tok.TokenBytes(id), Logprob: lp[id]}
	}
	return out
}
