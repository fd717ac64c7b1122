package sample

import (
	"context"
	"fmt"
	"sync"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// Batcher decodes the completions of concurrent Run calls that share weights and an adapter together, one
// batched Decode per step (continuous batching): a request joins at the step after its prefill and leaves
// when its completions end, so n concurrent requests read the weights once per token instead of n times.
// Rows of a batched Decode are computed independently of each other, so what else is in the batch changes a
// request's results only by the rounding of the matrix kernels, which take different code paths for
// different row counts: logprobs agree to about 1e-6 and a sampled token can only differ at a near-tie. A
// request decoded alone samples exactly what Run samples. The decoding goroutine exists only while there is
// work; a Batcher needs no closing.
type Batcher struct {
	w     *model.Weights
	lora  *model.LoRA
	tok   *tokenizer.Tokenizer
	stops map[int]bool

	mu      sync.Mutex
	joining []*request
	running bool
}

// NewBatcher returns a batcher for the weights plus lora (nil = base only).
func NewBatcher(w *model.Weights, lora *model.LoRA, tok *tokenizer.Tokenizer) *Batcher {
	return &Batcher{w: w, lora: lora, tok: tok, stops: stopSet(tok)}
}

// request is one Run call in the batch. Tokens reach the caller through an unbounded queue, so a slow
// consumer (a client reading a stream) never holds up the other requests' decoding.
type request struct {
	ctx    context.Context
	p      Params
	maxNew int
	states []*state

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

// Run is Run through the batch: the prompt is prefilled on the calling goroutine, decoding steps are shared
// with the other requests in flight, and onToken is called on the calling goroutine, as Run does.
func (b *Batcher) Run(ctx context.Context, prompt []int, p Params, onToken func(index int, t SampledToken)) ([]Completion, error) {
	states, maxNew, err := start(ctx, b.w, b.lora, prompt, &p)
	if err != nil {
		return nil, err
	}
	r := &request{ctx: ctx, p: p, maxNew: maxNew, states: states, wake: make(chan struct{}, 1)}
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
			return completions(states), nil
		}
	}
}

// loop runs decoding steps until no request is left.
func (b *Batcher) loop() {
	var reqs []*request
	// A panic here would take the whole process down with it (no caller's recovery sees this goroutine):
	// fail the requests of the batch instead.
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("sample: decoding panicked: %v", v)
			b.mu.Lock()
			reqs = append(reqs, b.joining...)
			b.joining, b.running = nil, false
			b.mu.Unlock()
			for _, r := range reqs {
				r.end(err)
			}
		}
	}()
	for {
		b.mu.Lock()
		reqs = append(reqs, b.joining...)
		b.joining = nil
		if len(reqs) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
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
