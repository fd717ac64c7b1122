package sample

// Constraint restricts the tokens one completion may produce, for structured outputs (a JSON object, a
// forced tool call). Before each draw the sampler calls Allow with a mask over the vocabulary, all true on
// entry; the tokens left true are the candidates, stop tokens included (a constraint ends the turn by
// allowing only stop tokens). After the draw the sampler calls Advance with the chosen id. Greedy decoding
// takes the most likely allowed token; sampling renormalises temperature, top-k and top-p over the allowed
// tokens. Reported logprobs stay those of the unconstrained model, as with top-k and top-p. A constraint
// that allows nothing is ignored for that step rather than stalling the completion.
type Constraint interface {
	Allow(mask []bool)
	Advance(id int)
}

// Banner is a Constraint that only ever rules out a fixed few ids (ignore_eos: the stop tokens), which it
// lists. Sampling at a temperature, without top-k or top-p, then takes their weights out of the sum instead
// of asking Allow for a mask over the vocabulary; everything else still goes through Allow.
type Banner interface {
	Constraint
	Banned() []int
}

// allowed asks the completion's constraint for the candidates of the next token; nil means any token.
func (s *state) allowed(vocab int) []bool {
	if s.con == nil {
		return nil
	}
	if s.mask == nil {
		s.mask = make([]bool, vocab)
	}
	for i := range s.mask {
		s.mask[i] = true
	}
	s.con.Allow(s.mask)
	for _, ok := range s.mask {
		if ok {
			return s.mask
		}
	}
	return nil
}
