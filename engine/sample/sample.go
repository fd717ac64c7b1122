package sample

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/trainyard/trainyard/engine/model"
)

// Run generates p.N completions of prompt. onToken (may be nil) receives every token once it can no longer
// be part of a stop sequence; calls are serialised on the calling goroutine, in completion-index order
// within a decoding step. Cancelling ctx stops generation with ctx.Err().
func Run(ctx context.Context, w *model.Weights, lora *model.LoRA, tok Vocab, prompt []int,
	p Params, onToken func(index int, t SampledToken)) ([]Completion, error) {
	states, maxNew, err := start(ctx, w, lora, prompt, &p)
	if err != nil {
		return nil, err
	}
	stops := stopSet(tok)
	for {
		active := advance(states, tok, stops, p, maxNew, onToken)
		if len(active) == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := decodeStep(ctx, w, lora, active); err != nil {
			return nil, err
		}
	}
	return completions(states), nil
}

// decodeStep feeds every row its last token in one batched decoding step and points each row's logits at
// its slice of the result.
func decodeStep(ctx context.Context, w *model.Weights, lora *model.LoRA, rows []*state) error {
	caches, ids := make([]*model.Cache, len(rows)), make([]int, len(rows))
	for i, s := range rows {
		caches[i], ids[i] = s.cache, s.out[len(s.out)-1].ID
	}
	all, err := w.Decode(ctx, caches, ids, lora)
	if err != nil {
		return err
	}
	V := w.Cfg.VocabSize
	for i, s := range rows {
		s.logits = all[i*V : (i+1)*V]
	}
	return nil
}

// start validates p (filling its defaults), prefills prompt and returns the p.N completions, ready to
// choose their first token, with the most tokens each may generate.
func start(ctx context.Context, w *model.Weights, lora *model.LoRA, prompt []int, p *Params) ([]*state, int, error) {
	base, maxNew, err := prepare(w, nil, prompt, p)
	if err != nil {
		return nil, 0, err
	}
	logits, err := w.Prefill(ctx, base, prompt, lora)
	if err != nil {
		return nil, 0, err
	}
	return fork(base, logits, *p), maxNew, nil
}

// prepare validates p (filling its defaults) against prompt and returns the empty cache to prefill the
// prompt into (from pool, when set) and the most tokens each completion may generate.
func prepare(w *model.Weights, pool *model.CachePool, prompt []int, p *Params) (*model.Cache, int, error) {
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	ctxLen := w.Cfg.MaxSeqLen
	if len(prompt) == 0 {
		return nil, 0, fmt.Errorf("%w: empty prompt", ErrInvalidParams)
	}
	if len(prompt) >= ctxLen || len(prompt)+p.MaxTokens > ctxLen {
		return nil, 0, fmt.Errorf("%w: %d prompt tokens + %d max tokens > %d", ErrContextOverflow, len(prompt), p.MaxTokens, ctxLen)
	}
	maxNew := ctxLen - len(prompt)
	if p.MaxTokens > 0 {
		maxNew = p.MaxTokens
	}
	return w.NewPooledCache(pool, len(prompt)+maxNew), maxNew, nil
}

// fork returns the p.N completions of a prefilled prompt (base and the logits of its last position).
func fork(base *model.Cache, logits []float32, p Params) []*state {
	states := make([]*state, p.N)
	for i := range states {
		c := base
		if i > 0 {
			c = base.Clone()
		}
		states[i] = &state{idx: i, cache: c, rng: rand.New(rand.NewPCG(uint64(p.Seed), uint64(i))), logits: logits}
		if p.Constraint != nil {
			states[i].con = p.Constraint(i)
		}
	}
	return states
}

func stopSet(tok Vocab) map[int]bool {
	stops := map[int]bool{}
	for _, id := range tok.StopTokens() {
		stops[id] = true
	}
	return stops
}

// advance chooses the next token of every unfinished completion and returns those that need another
// decoding step.
func advance(states []*state, tok Vocab, stops map[int]bool, p Params, maxNew int,
	onToken func(int, SampledToken)) []*state {
	var active []*state
	for _, s := range states {
		if s.done {
			continue
		}
		id, lp := s.next(p)
		if stops[id] {
			s.finish("stop", onToken)
			continue
		}
		s.push(tok, id, lp, p, onToken)
		if s.done {
			continue
		}
		if len(s.out) >= maxNew {
			s.finish("length", onToken)
			continue
		}
		active = append(active, s)
	}
	return active
}

func completions(states []*state) []Completion {
	out := make([]Completion, len(states))
	for i, s := range states {
		out[i] = Completion{Index: i, Tokens: s.out, Text: s.text.String(), FinishReason: s.reason}
	}
	return out
}

// state is one completion in progress.
type state struct {
	idx     int
	cache   *model.Cache
	rng     *rand.Rand
	logits  []float32
	out     []SampledToken
	text    strings.Builder
	ends    []int // text length after each token of out
	emitted int   // tokens already passed to onToken
	done    bool
	reason  string
	con     Constraint // nil when unconstrained
	mask    []bool     // scratch for con
	// Scratch of choose, reused token after token: log-probabilities, sampling weights, the weights' sums
	// by block (draw), sort keys and ids.
	lp, w []float32
	sums  []float64
	keys  []uint64
	order []int
	// picked says pickID (with lp) is the next token, chosen ahead by pick.
	picked bool
	pickID int
}

// pick chooses the next token ahead of advance (which may run on another goroutine than choose would).
func (s *state) pick(p Params) {
	s.pickID, _ = s.choose(p)
	s.picked = true
}

// next returns the token pick chose, or chooses it now.
func (s *state) next(p Params) (int, []float32) {
	if s.picked {
		s.picked = false
		return s.pickID, s.lp
	}
	return s.choose(p)
}

// Vocab is what sampling needs of a tokenizer: the bytes of each token (streamed text, stop sequences,
// logprobs) and the ids that end a turn. The byte-level tokenizer.Tokenizer is one; a model with a
// Hugging Face tokenizer pairs it with the stop tokens of its snapshot.
type Vocab interface {
	TokenBytes(id int) []byte
	StopTokens() []int
}

// orderedBits maps a float32 to a uint32 in the same order (negative values below positive ones, -Inf
// lowest), so that integer comparison sorts floats.
func orderedBits(f float32) uint32 {
	if f == 0 {
		f = 0 // -0 ties with +0, as in a float comparison
	}
	b := math.Float32bits(f)
	if b>>31 == 1 {
		return ^b
	}
	return b | 1<<31
}
