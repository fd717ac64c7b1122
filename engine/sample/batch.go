package sample

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/engine/model"
)

// Batcher decodes the completions of concurrent Run calls on one base model together, one batched decoding
// step for all of them (continuous batching): a request joins at the step after its prefill and leaves when
// its completions end, so n concurrent requests read the weights once per token instead of n times. The
// requests may be on different adapters of the base (or none): each step computes the base's products once
// for every row and adds each adapter's low-rank term to its own rows (model.DecodeAdapters). Prefills are
// batched the same way: the requests that arrive while a pass is running are prefilled together in one
// pass before the next step, a long prompt a chunk per step (prefillChunk) so that the sequences decoding
// wait at most one chunk; requests with the same prompt and adapter — the rollouts of one group — prefill
// it once, and a prompt that starts like a recent one prefills only the rest (see promptCache). Rows of a
// batched step and prompts of a batched prefill are computed independently of each other, so what else is in the batch changes a
// request's results only by the rounding of the matrix kernels, which take different code paths for
// different row counts: logprobs agree to about 1e-6 and a sampled token can only differ at a near-tie. A
// request decoded alone samples exactly what Run samples. The decoding goroutine exists only while there is
// work; a Batcher needs no closing.
type Batcher struct {
	w     *model.Weights
	tok   Vocab
	stops map[int]bool
	// maxPrefill is the most prompt tokens one prefill pass takes (prefillTokens), chunk the most of one
	// prompt, and of all while other requests decode (prefillChunk); both smaller in tests.
	maxPrefill, chunk int
	prompts           *promptCache
	caches            *model.CachePool // the requests' caches, released when a request ends
	// The loop's own: the logits of the last decoding step (reused by the next), the requests prefilling
	// their prompts a chunk per pass, those waiting for another with the same prompt, and those to admit
	// again because the one they waited for ended.
	logits    []float32
	arena     model.Arena // every pass's buffers, reused pass after pass
	filling   []*request
	followers map[*request][]*request
	readmit   []*request

	mu      sync.Mutex
	joining []*request
	running bool
	// followed, in tests, sees each follower's cache once it holds the prompt.
	followed func(*model.Cache)
}

// NewBatcher returns a batcher for requests on the weights, each with its own adapter or none.
func NewBatcher(w *model.Weights, tok Vocab) *Batcher {
	return &Batcher{w: w, tok: tok, stops: stopSet(tok), maxPrefill: prefillTokens, chunk: prefillChunk,
		prompts: newPromptCache(promptCacheBytes), caches: model.NewCachePool(cachePoolBytes), followers: map[*request][]*request{}}
}

// cachePoolBytes is the memory of ended requests' caches a batcher keeps for the next ones: an RL
// iteration's 32 rollouts of 226 positions at SmolLM2-135M's width take 377 MB.
const cachePoolBytes = 512 << 20

// release hands the request's caches back (the first time it ends): the batcher no longer uses them, and a
// cache that others read positions from stays until they are released too.
func (r *request) release() {
	if r.cache != nil {
		r.cache.Release()
		r.cache = nil
	}
	for _, s := range r.states {
		s.cache.Release()
		s.cache = nil
	}
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
	states []*state     // set once the prompt is prefilled
	filled int          // prompt tokens in cache so far
	shared int          // prompt tokens whose prefill came from another request

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
	first := !r.done
	r.done, r.err = true, err
	r.mu.Unlock()
	if first {
		r.release()
	}
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
	cache, maxNew, err := prepare(b.w, b.caches, prompt, &p)
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
			reqs = append(append(append(append(reqs, joined...), b.joining...), b.filling...), b.readmit...)
			for _, f := range b.followers {
				reqs = append(reqs, f...)
			}
			b.joining, b.filling, b.readmit, b.followers, b.running = nil, nil, nil, map[*request][]*request{}, false
			b.mu.Unlock()
			for _, r := range reqs {
				r.end(err)
			}
		}
	}()
	for {
		b.mu.Lock()
		joined, b.joining = append(b.readmit, b.joining...), nil
		b.readmit = nil
		if len(reqs) == 0 && len(joined) == 0 && len(b.filling) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		reqs = append(reqs, b.admit(joined)...)
		joined = nil
		reqs = append(reqs, b.fill(len(reqs) > 0)...)
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
	all, err := b.w.DecodeAdapters(context.Background(), caches, ids, ls, b.logits, &b.arena)
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
	linalg.ParallelFor(workers, len(todo), func(_, i int) { todo[i].s.pick(*todo[i].p) })
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
// products gain nothing more from sharing the weights.
const prefillTokens = 4096

// prefillChunk caps the tokens of one prompt in one pass, and of all prompts in a pass while other
// requests decode: a long prompt is prefilled a chunk per step, between decoding steps, so the sequences
// already decoding wait at most one chunk's pass for their next token.
const prefillChunk = 512

// admit sorts the requests that joined: one whose prompt (with its adapter) the prompt cache holds is ready
// at once; one whose prompt a request still prefilling has waits for that one and shares its cache's prompt; the
// others start prefilling, from the longest start of their prompt the cache holds.
func (b *Batcher) admit(joined []*request) []*request {
	var ready []*request
	for _, r := range joined {
		if err := r.ctx.Err(); err != nil {
			r.end(err)
			continue
		}
		e, n := b.prompts.lookup(r.lora, r.prompt)
		if e != nil && n == len(r.prompt) {
			r.cache.SharePrefix(e.cache, n)
			r.states, r.cache, r.shared = fork(r.cache, e.logits, r.p), nil, n
			ready = append(ready, r)
			continue
		}
		if l := b.leaderOf(r); l != nil {
			b.followers[l] = append(b.followers[l], r)
			continue
		}
		if e != nil {
			r.cache.SharePrefix(e.cache, n)
			r.filled, r.shared = n, n
		}
		b.filling = append(b.filling, r)
	}
	return ready
}

// leaderOf returns the request prefilling r's prompt with r's adapter, if any.
func (b *Batcher) leaderOf(r *request) *request {
	for _, l := range b.filling {
		if l.lora == r.lora && slices.Equal(l.prompt, r.prompt) {
			return l
		}
	}
	return nil
}

// fill runs one prefill pass: the next chunk of each prefilling request, oldest first, up to prefillTokens
// in all (prefillChunk while other requests decode). It returns the requests whose prompts are then
// complete, with the requests that waited for them.
func (b *Batcher) fill(decoding bool) []*request {
	budget := b.maxPrefill
	if decoding {
		budget = min(budget, b.chunk)
	}
	var group []*request
	var chunks [][]int
	live := b.filling[:0]
	for _, r := range b.filling {
		if err := r.ctx.Err(); err != nil {
			r.end(err)
			b.orphan(r)
			continue
		}
		live = append(live, r)
		if budget > 0 {
			n := min(len(r.prompt)-r.filled, budget, b.chunk)
			group = append(group, r)
			chunks = append(chunks, r.prompt[r.filled:r.filled+n])
			budget -= n
		}
	}
	b.filling = live
	if len(group) == 0 {
		return nil
	}
	caches, loras := make([]*model.Cache, len(group)), make([]*model.LoRA, len(group))
	for i, r := range group {
		caches[i], loras[i] = r.cache, r.lora
	}
	// As with a decoding step, no single request's context may cancel a shared pass.
	all, err := b.w.ExtendAdapters(context.Background(), caches, chunks, loras, nil, &b.arena)
	V := b.w.Cfg.VocabSize
	logits := func(i int) []float32 { return all[i*V : (i+1)*V : (i+1)*V] }
	failed := map[*request]bool{}
	if err != nil {
		// Something in one prompt (a token id outside the vocabulary) fails the whole pass before it touches a
		// cache: extend each alone so that only the requests at fault, and those waiting for them, fail.
		outs := make([][]float32, len(group))
		for i, r := range group {
			if outs[i], err = b.w.ExtendAdapters(context.Background(), caches[i:i+1], chunks[i:i+1], loras[i:i+1], nil, &b.arena); err != nil {
				failed[r] = true
				r.end(err)
				for _, f := range b.followers[r] {
					f.end(err)
				}
				delete(b.followers, r)
				b.drop(r)
			}
		}
		logits = func(i int) []float32 { return outs[i] }
	}
	var ready []*request
	for i, r := range group {
		if failed[r] {
			continue
		}
		r.filled += len(chunks[i])
		if r.filled < len(r.prompt) {
			continue
		}
		b.drop(r)
		// The leader's cache reads the prompt from the prompt cache's copy from now on. When it had taken a
		// start from the prompt cache (the system prompt every RL group begins with), it read from two places,
		// and sharing it (its other completions, the followers) copied the whole prompt for each (a cache reads
		// from one other at most): decoding then attended to each copy apart, a group of 8 rollouts reading the
		// prompt's keys and values 7 times a step instead of once.
		if kept := b.prompts.put(r.lora, r.prompt, r.cache, logits(i)); kept != nil {
			r.cache.Rebase(kept)
		}
		r.states, r.cache = fork(r.cache, logits(i), r.p), nil
		ready = append(ready, r)
		for _, f := range b.followers[r] {
			// Until the first decoding step, the leader's first completion's cache holds exactly the prompt.
			f.cache.SharePrefix(r.states[0].cache, len(r.prompt))
			if b.followed != nil {
				b.followed(f.cache)
			}
			f.states, f.cache, f.shared = fork(f.cache, logits(i), f.p), nil, len(f.prompt)
			ready = append(ready, f)
		}
		delete(b.followers, r)
	}
	return ready
}

// drop takes r off the prefilling list.
func (b *Batcher) drop(r *request) {
	if i := slices.Index(b.filling, r); i >= 0 {
		b.filling = slices.Delete(b.filling, i, i+1)
	}
}

// orphan hands the requests that waited for r, which ended before its prompt was complete, back to
// admission: one of them prefills the prompt instead.
func (b *Batcher) orphan(r *request) {
	if f := b.followers[r]; len(f) > 0 {
		delete(b.followers, r)
		b.readmit = append(b.readmit, f...)
	}
}
