package sample

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/trainyard/trainyard/engine/model"
)

// Batcher decodes the completions of concurrent Run calls on one base model together, one batched decoding
// step for all of them (continuous batching): a request joins at the step after its prefill and leaves when
// its completions end, so n concurrent requests read the weights once per token instead of n times. The
// requests may be on different adapters of the base (or none): each step computes the base's products once
// for every row and adds each adapter's low-rank term to its own rows (model.DecodeAdapters). Prefills are
// batched the same way: the requests that arrive while a prefill or decoding step is running are prefilled
// together in one forward pass before the next step, and requests with the same prompt and adapter —
// the rollouts of one group — prefill it once (see prompts). Rows of a batched step and prompts of a
// batched prefill are computed independently of each other, so what else is in the batch changes a
// request's results only by the rounding of the matrix kernels, which take different code paths for
// different row counts: logprobs agree to about 1e-6 and a sampled token can only differ at a near-tie. A
// request decoded alone samples exactly what Run samples. The decoding goroutine exists only while there is
// work; a Batcher needs no closing.
type Batcher struct {
	w     *model.Weights
	tok   Vocab
	stops map[int]bool
	// maxPrefill is the most prompt tokens one prefill pass takes (prefillTokens; smaller in tests).
	maxPrefill int
	prompts    *promptCache
	logits     []float32 // of the last decoding step, reused by the next (the loop's own)

	mu      sync.Mutex
	joining []*request
	running bool
}

// NewBatcher returns a batcher for requests on the weights, each with its own adapter or none.
func NewBatcher(w *model.Weights, tok Vocab) *Batcher {
	return &Batcher{w: w, tok: tok, stops: stopSet(tok), maxPrefill: prefillTokens,
		prompts: newPromptCache(promptCacheBytes)}
}

// request is one Run call in the batch. Tokens reach the caller through an unbounded queue, so a slow
// consumer (a client reading a stream) never holds up the other requests' decoding.
type request struct {
	ctx    context.Context
	lora   *model.LoRA
	p      Params
	maxNew int
	prompt []int
	cache  *model.Cache // the empty cache prompt is prefilled into
	states []*state     // set by the prefill
	shared int          // prompt tokens whose prefill came from another request
	logits []float32    // of the prompt's last position, once prefilled

	mu    sync.Mutex
	queue []queued
	done  bool
	err   error
	wake  chan struct{} // capacity 1: "the queue or done changed"
}

type queued struct {
	index int
	t     SampledToken
}

func (r *request) emit(index int, t SampledToken) {
	r.mu.Lock()
	r.queue = append(r.queue, queued{index, t})
	r.mu.Unlock()
	r.signal()
}

func (r *request) end(err error) {
	r.mu.Lock()
	r.done, r.err = true, err
	r.mu.Unlock()
	r.signal()
}

func (r *request) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run is Run through the batch, with adapter lora (nil = the base model): the prompt is prefilled together
// with those of the other requests that arrive meanwhile, decoding steps are shared with the other requests
// in flight, and onToken is called on the calling goroutine, as Run does. Each completion's CachedPrompt is
// the number of prompt tokens whose prefill this request took from another with the same prompt.
func (b *Batcher) Run(ctx context.Context, lora *model.LoRA, prompt []int, p Params, onToken func(index int, t SampledToken)) ([]Completion, error) {
	cache, maxNew, err := prepare(b.w, prompt, &p)
	if err != nil {
		return nil, err
	}
	r := &request{ctx: ctx, lora: lora, p: p, maxNew: maxNew, prompt: prompt, cache: cache, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.joining = append(b.joining, r)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	for {
		<-r.wake
		r.mu.Lock()
		q, done, err := r.queue, r.done, r.err
		r.queue = nil
		r.mu.Unlock()
		if onToken != nil {
			for _, e := range q {
				onToken(e.index, e.t)
			}
		}
		if done {
			if err != nil {
				return nil, err
			}
			out := completions(r.states)
			for i := range out {
				out[i].CachedPrompt = r.shared
			}
			return out, nil
		}
	}
}

// loop prefills the requests that joined and runs decoding steps until no request is left.
func (b *Batcher) loop() {
	var reqs, joined []*request
	// A panic here would take the whole process down with it (no caller's recovery sees this goroutine):
	// fail the requests of the batch instead.
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("sample: decoding panicked: %v", v)
			b.mu.Lock()
			reqs = append(append(reqs, joined...), b.joining...)
			b.joining, b.running = nil, false
			b.mu.Unlock()
			for _, r := range reqs {
				r.end(err)
			}
		}
	}()
	for {
		b.mu.Lock()
		joined, b.joining = b.joining, nil
		if len(reqs) == 0 && len(joined) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		reqs = append(reqs, b.prefill(joined)...)
		joined = nil
		pickAll(reqs)
		var rows []*state
		var loras []*model.LoRA
		live := reqs[:0]
		for _, r := range reqs {
			if err := r.ctx.Err(); err != nil {
				r.end(err)
				continue
			}
			active := advance(r.states, b.tok, b.stops, r.p, r.maxNew, r.emit)
			if len(active) == 0 {
				r.end(nil)
				continue
			}
			live = append(live, r)
			rows = append(rows, active...)
			for range active {
				loras = append(loras, r.lora)
			}
		}
		reqs = live
		if len(rows) == 0 {
			continue
		}
		// The step serves every request in it, so no single request's context may cancel it; each request's
		// cancellation is seen between steps above.
		if err := b.decodeRows(rows, loras); err != nil {
			for _, r := range reqs {
				r.end(err)
			}
			reqs = nil
		}
	}
}

// decodeRows runs one decoding step of rows, row i on adapter loras[i], with the rows of each adapter
// next to each other so that each adapter's term is one product over its rows.
func (b *Batcher) decodeRows(rows []*state, loras []*model.LoRA) error {
	group := map[*model.LoRA]int{}
	for _, l := range loras {
		if _, ok := group[l]; !ok {
			group[l] = len(group)
		}
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, c int) int { return group[loras[a]] - group[loras[c]] })
	caches, ids, ls := make([]*model.Cache, len(rows)), make([]int, len(rows)), make([]*model.LoRA, len(rows))
	for i, o := range order {
		s := rows[o]
		caches[i], ids[i], ls[i] = s.cache, s.out[len(s.out)-1].ID, loras[o]
	}
	// Every row chose its token from the last step's logits before this step: their buffer is free.
	b.logits = grow(b.logits, len(rows)*b.w.Cfg.VocabSize)
	all, err := b.w.DecodeAdapters(context.Background(), caches, ids, ls, b.logits)
	if err != nil {
		return err
	}
	V := b.w.Cfg.VocabSize
	for i, o := range order {
		rows[o].logits = all[i*V : (i+1)*V]
	}
	return nil
}

// pickAll chooses the next token of every unfinished completion of the live requests, spread over the
// cores: over a vocabulary of 150,000 tokens a choice costs about what a row's share of the decoding step
// does, and the completions are independent of each other. advance then takes the picks in order.
func pickAll(reqs []*request) {
	var todo []pick
	vocab := 0
	for _, r := range reqs {
		if r.ctx.Err() != nil {
			continue
		}
		for _, s := range r.states {
			if !s.done {
				todo = append(todo, pick{s, &r.p})
				vocab += len(s.logits)
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	if workers < 2 || vocab < pickParallelMin {
		for _, t := range todo {
			t.s.pick(*t.p)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(todo); i = int(next.Add(1) - 1) {
				todo[i].s.pick(*todo[i].p)
			}
		})
	}
	wg.Wait()
}

type pick struct {
	s *state
	p *Params
}

// pickParallelMin is the logits of one step below which choosing is not worth handing to other goroutines
// (a goroutine takes microseconds to start; a logit takes nanoseconds).
const pickParallelMin = 64 << 10

// prefillTokens caps the prompt tokens prefilled in one pass: its activations grow with the rows (about
// 30 KB a row at SmolLM2-135M's shape, 80 KB at Qwen2.5-0.5B's), and past a few thousand rows the matrix
// products gain nothing more from sharing the weights. A longer prompt is prefilled alone.
const prefillTokens = 4096

// prefill prefills the prompts of the requests that joined, in groups of at most b.maxPrefill tokens that
// each take one forward pass, and returns those ready to decode; the others have ended with their error. A
// prompt (with its adapter) that another request of the same pass has, or that the prompt cache holds, is
// not prefilled again: the request copies the other's cache. As with a decoding step, no single request's
// context may cancel a shared pass: a request cancelled before it ends without it.
func (b *Batcher) prefill(joined []*request) []*request {
	var ready, group []*request
	leaders := map[promptKey]*request{}
	var followers []*request
	tokens := 0
	for _, r := range joined {
		if err := r.ctx.Err(); err != nil {
			r.end(err)
			continue
		}
		key := keyOf(r.lora, r.prompt)
		if e := b.prompts.get(key, r.prompt); e != nil {
			r.cache.CopyPrefix(e.cache)
			r.states, r.cache, r.shared = fork(r.cache, e.logits, r.p), nil, len(r.prompt)
			ready = append(ready, r)
			continue
		}
		if l := leaders[key]; l != nil && slices.Equal(l.prompt, r.prompt) {
			followers = append(followers, r)
			continue
		}
		leaders[key] = r
		if len(group) > 0 && tokens+len(r.prompt) > b.maxPrefill {
			ready = append(ready, b.prefillGroup(group)...)
			group, tokens = nil, 0
		}
		group = append(group, r)
		tokens += len(r.prompt)
	}
	if len(group) > 0 {
		ready = append(ready, b.prefillGroup(group)...)
	}
	for _, r := range followers {
		l := leaders[keyOf(r.lora, r.prompt)]
		if l.states == nil { // the leader's prefill failed: so would this one
			l.mu.Lock()
			err := l.err
			l.mu.Unlock()
			r.end(err)
			continue
		}
		// Until the first decoding step, the leader's first completion's cache holds exactly the prompt.
		r.cache.CopyPrefix(l.states[0].cache)
		r.states, r.cache, r.shared = fork(r.cache, l.logits, r.p), nil, len(r.prompt)
		ready = append(ready, r)
	}
	return ready
}

// prefillGroup prefills the prompts of group in one forward pass, each with its adapter, caches them for
// later requests with the same prompt, and returns the requests ready to decode.
func (b *Batcher) prefillGroup(group []*request) []*request {
	caches, prompts, loras := make([]*model.Cache, len(group)), make([][]int, len(group)), make([]*model.LoRA, len(group))
	for i, r := range group {
		caches[i], prompts[i], loras[i] = r.cache, r.prompt, r.lora
	}
	all, err := b.w.PrefillAdapters(context.Background(), caches, prompts, loras)
	if err != nil && len(group) > 1 {
		// Something in one prompt (a token id outside the vocabulary) fails the whole pass: prefill each
		// alone so that only the requests at fault see an error.
		var ok []*request
		for _, r := range group {
			logits, err := b.w.Prefill(context.Background(), r.cache, r.prompt, r.lora)
			if err != nil {
				r.end(err)
				continue
			}
			b.ready(r, logits)
			ok = append(ok, r)
		}
		return ok
	}
	if err != nil {
		group[0].end(err)
		return nil
	}
	V := b.w.Cfg.VocabSize
	for i, r := range group {
		b.ready(r, all[i*V:(i+1)*V:(i+1)*V])
	}
	return group
}

// ready forks a prefilled request into its completions and offers its prompt to the cache.
func (b *Batcher) ready(r *request, logits []float32) {
	b.prompts.put(keyOf(r.lora, r.prompt), r.prompt, r.cache, logits)
	r.states, r.cache, r.logits = fork(r.cache, logits, r.p), nil, logits
}
