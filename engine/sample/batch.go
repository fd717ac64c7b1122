package sample

import (
	"context"
	"fmt"
	"sync"

	"github.com/trainyard/trainyard/engine/model"
)

// Batcher decodes the completions of concurrent Run calls that share weights and an adapter together, one
// batched Decode per step (continuous batching): a request joins at the step after its prefill and leaves
// when its completions end, so n concurrent requests read the weights once per token instead of n times.
// Prefills are batched the same way: the requests that arrive while a prefill or decoding step is running
// are prefilled together in one forward pass before the next step. Rows of a batched Decode and prompts of
// a batched prefill are computed independently of each other, so what else is in the batch changes a
// request's results only by the rounding of the matrix kernels, which take different code paths for
// different row counts: logprobs agree to about 1e-6 and a sampled token can only differ at a near-tie. A
// request decoded alone samples exactly what Run samples. The decoding goroutine exists only while there is
// work; a Batcher needs no closing.
type Batcher struct {
	w     *model.Weights
	lora  *model.LoRA
	tok   Vocab
	stops map[int]bool
	// maxPrefill is the most prompt tokens one prefill pass takes (prefillTokens; smaller in tests).
	maxPrefill int

	mu      sync.Mutex
	joining []*request
	running bool
}

// NewBatcher returns a batcher for the weights plus lora (nil = base only).
func NewBatcher(w *model.Weights, lora *model.LoRA, tok Vocab) *Batcher {
	return &Batcher{w: w, lora: lora, tok: tok, stops: stopSet(tok), maxPrefill: prefillTokens}
}

// request is one Run call in the batch. Tokens reach the caller through an unbounded queue, so a slow
// consumer (a client reading a stream) never holds up the other requests' decoding.
type request struct {
	ctx    context.Context
	p      Params
	maxNew int
	prompt []int
	cache  *model.Cache // the empty cache prompt is prefilled into
	states []*state     // set by the prefill

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

// Run is Run through the batch: the prompt is prefilled together with those of the other requests that
// arrive meanwhile, decoding steps are shared with the other requests in flight, and onToken is called on
// the calling goroutine, as Run does.
func (b *Batcher) Run(ctx context.Context, prompt []int, p Params, onToken func(index int, t SampledToken)) ([]Completion, error) {
	cache, maxNew, err := prepare(b.w, prompt, &p)
	if err != nil {
		return nil, err
	}
	r := &request{ctx: ctx, p: p, maxNew: maxNew, prompt: prompt, cache: cache, wake: make(chan struct{}, 1)}
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
			return completions(r.states), nil
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
		var rows []*state
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
		}
		reqs = live
		if len(rows) == 0 {
			continue
		}
		// The step serves every request in it, so no single request's context may cancel it; each request's
		// cancellation is seen between steps above.
		if err := decodeStep(context.Background(), b.w, b.lora, rows); err != nil {
			for _, r := range reqs {
				r.end(err)
			}
			reqs = nil
		}
	}
}

// prefillTokens caps the prompt tokens prefilled in one pass: its activations grow with the rows (about
// 30 KB a row at SmolLM2-135M's shape, 80 KB at Qwen2.5-0.5B's), and past a few thousand rows the matrix
// products gain nothing more from sharing the weights. A longer prompt is prefilled alone.
const prefillTokens = 4096

// prefill prefills the prompts of the requests that joined, in groups of at most b.maxPrefill tokens that
// each take one forward pass, and returns those ready to decode; the others have ended with their error. As
// with a decoding step, no single request's context may cancel a shared pass: a request cancelled before
// it ends without it.
func (b *Batcher) prefill(joined []*request) []*request {
	var ready, group []*request
	tokens := 0
	for _, r := range joined {
		if err := r.ctx.Err(); err != nil {
			r.end(err)
			continue
		}
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
	return ready
}

// prefillGroup prefills the prompts of group in one forward pass and returns the requests ready to decode.
func (b *Batcher) prefillGroup(group []*request) []*request {
	caches, prompts := make([]*model.Cache, len(group)), make([][]int, len(group))
	for i, r := range group {
		caches[i], prompts[i] = r.cache, r.prompt
	}
	all, err := b.w.PrefillBatch(context.Background(), caches, prompts, b.lora)
	if err != nil && len(group) > 1 {
		// Something in one prompt (a token id outside the vocabulary) fails the whole pass: prefill each
		// alone so that only the requests at fault see an error.
		var ok []*request
		for _, r := range group {
			logits, err := b.w.Prefill(context.Background(), r.cache, r.prompt, b.lora)
			if err != nil {
				r.end(err)
				continue
			}
			r.states, r.cache = fork(r.cache, logits, r.p), nil
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
		r.states, r.cache = fork(r.cache, all[i*V:(i+1)*V:(i+1)*V], r.p), nil
	}
	return group
}
