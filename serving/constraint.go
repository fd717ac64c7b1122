package serving

// constraint restricts the tokens of one completion to a grammar within a token budget: a token is allowed
// only when the grammar accepts it and the shortest completion after it, plus the end-of-turn token, still
// fits the budget. So a constrained completion always ends complete with finish_reason "stop" — a JSON
// object always parses, a forced tool call is always well formed — as long as the budget covers the
// grammar's shortest sentence, which Service.Start checks before sampling.
type constraint struct {
	g     masker
	left  int   // tokens that may still be generated, end-of-turn included
	stops []int // the end-of-turn tokens
}

func newConstraint(g masker, budget int, stops []int) *constraint {
	return &constraint{g: g, left: budget, stops: stops}
}

// minBudget is the fewest tokens a completion of g needs, end-of-turn included.
func minBudget(g grammar) int { return g.cost() + 1 }

// Allow sets mask[id] to whether token id may come next: a token the grammar accepts (computed by the
// grammar for the whole vocabulary at once, see tokenTrie) or, once the sentence is complete, the end of
// turn.
func (c *constraint) Allow(mask []bool) {
	// After a token, left-1 tokens remain: enough for the rest of the sentence (cost) and the end of turn.
	c.g.allow(mask, c.left-2)
	done := c.g.done()
	for _, id := range c.stops {
		if id >= 0 && id < len(mask) {
			mask[id] = done
		}
	}
}

// Advance records that token id was sampled.
func (c *constraint) Advance(id int) {
	if g, ok := c.g.next(id); ok {
		c.g = g.(masker) // a masker's next is of its own type
	}
	c.left--
}

// eosBan keeps the end-of-turn tokens out of a completion (ignore_eos). It holds no state, so one value
// serves every completion.
type eosBan []int

// Allow masks the end-of-turn tokens.
func (e eosBan) Allow(mask []bool) {
	for _, id := range e {
		mask[id] = false
	}
}

// Advance has nothing to record.
func (eosBan) Advance(int) {}

// Banned lists the end-of-turn tokens (sample.Banner): the sampler drops their weights without a mask.
func (e eosBan) Banned() []int { return e }
