package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
)

// TestSamplerBatchesWithoutChangingResults runs many different requests at once through one Sampler and
// checks each against Base.Sample alone: batching across requests changes no token and moves logprobs only
// by kernel rounding.
func TestSamplerBatchesWithoutChangingResults(t *testing.T) {
	b := tinyBase(t, 5)
	a, err := b.NewAdapter(DefaultLoRAConfig(), 2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.NewSampler(a)
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		prompt []int
		p      SampleParams
	}
	var jobs []job
	for i := 0; i < 12; i++ {
		prompt, err := b.RenderPrompt([]Message{{Role: "user", Content: fmt.Sprintf("Request %d: %s", i, "tell me more"[:i%12])}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := SampleParams{Temperature: float32(i%3) * 0.5, TopK: 40 * (i % 2), Seed: int64(i), MaxTokens: 8 + 3*i, N: 1 + i%3, TopLogprobs: i % 4}
		if i%4 == 1 {
			p.Stop = []string{"e", "a"}
		}
		jobs = append(jobs, job{prompt, p})
	}
	want := make([][]Completion, len(jobs))
	for i, j := range jobs {
		if want[i], err = b.Sample(context.Background(), a, j.prompt, j.p, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := make([][]Completion, len(jobs))
	streamed := make([]map[int][]int, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streamed[i] = map[int][]int{}
			var err error
			got[i], err = s.Sample(context.Background(), j.prompt, j.p, func(idx int, tk SampledToken) {
				streamed[i][idx] = append(streamed[i][idx], tk.ID)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range jobs {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("request %d: %d completions, want %d", i, len(got[i]), len(want[i]))
		}
		for c := range want[i] {
			w, g := want[i][c], got[i][c]
			if g.Text != w.Text || g.FinishReason != w.FinishReason || len(g.Tokens) != len(w.Tokens) || len(streamed[i][c]) != len(w.Tokens) {
				t.Fatalf("request %d completion %d: batched %q (%s), alone %q (%s)", i, c, g.Text, g.FinishReason, w.Text, w.FinishReason)
			}
			for k := range w.Tokens {
				if g.Tokens[k].ID != w.Tokens[k].ID || math.Abs(float64(g.Tokens[k].Logprob-w.Tokens[k].Logprob)) > 1e-4 ||
					len(g.Tokens[k].Top) != len(w.Tokens[k].Top) {
					t.Fatalf("request %d completion %d token %d differs in the batch: id %d vs %d, logprob %g vs %g", i, c, k,
						g.Tokens[k].ID, w.Tokens[k].ID, g.Tokens[k].Logprob, w.Tokens[k].Logprob)
				}
			}
		}
	}
}

// TestSamplerCancellation: a cancelled request leaves the batch with ctx.Err() while the others finish.
func TestSamplerCancellation(t *testing.T) {
	b := tinyBase(t, 6)
	s, err := b.NewSampler(nil)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := b.RenderPrompt([]Message{{Role: "user", Content: "go"}}, nil)
	// The long request is cancelled as its first token is accepted, on the decoding goroutine itself: onToken
	// runs on the caller's goroutine, which the decoding loop does not wait for, so a cancel from there can
	// arrive after the request has already run to the end of the context. It may not stop on its own either.
	ctx, cancel := context.WithCancel(context.Background())
	stops := b.StopTokens()
	long := SampleParams{Temperature: 1, Seed: 1, // until the context is full
		Constraint: func(int) Constraint { return cancelOnFirstToken{cancel: cancel, forbid: stops} }}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Sample(ctx, prompt, long, nil)
		errc <- err
	}()
	short := SampleParams{Temperature: 1, Seed: 2, MaxTokens: 10}
	out, err := s.Sample(context.Background(), prompt, short, nil)
	if err != nil || len(out[0].Tokens) == 0 {
		t.Fatalf("the other request: %v", err)
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	if _, err := s.Sample(context.Background(), prompt, SampleParams{N: -1}, nil); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("bad params: %v, want ErrInvalidInput", err)
	}
}

// cancelOnFirstToken forbids the forbid tokens and calls cancel when a token is accepted.
type cancelOnFirstToken struct {
	cancel context.CancelFunc
	forbid []int
}

func (c cancelOnFirstToken) Allow(mask []bool) {
	for _, id := range c.forbid {
		mask[id] = false
	}
}

func (c cancelOnFirstToken) Advance(int) { c.cancel() }
