package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/model"
)

// byteVocab is a vocabulary of single bytes with no stop token.
type byteVocab struct{}

func (byteVocab) TokenBytes(id int) []byte { return []byte{byte(id)} }
func (byteVocab) StopTokens() []int        { return nil }

func testWeights(t testing.TB) *model.Weights {
	cfg := model.Config{VocabSize: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Hidden: 48,
		MaxSeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, Arch: "llama"}
	w, err := model.NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Init(3)
	return w
}

// runHeld starts one Batcher.Run per prompt and lets the batcher's loop start only once all of them have
// joined, so that their prompts are prefilled in one batched pass; it returns each call's result.
func runHeld(t *testing.T, b *Batcher, ctxs []context.Context, prompts [][]int, params []Params) ([][]Completion, []error) {
	t.Helper()
	b.mu.Lock()
	b.running = true // hold the loop back: Run only queues the request
	b.mu.Unlock()
	outs, errs := make([][]Completion, len(prompts)), make([]error, len(prompts))
	var wg sync.WaitGroup
	for i := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = b.Run(ctxs[i], prompts[i], params[i], nil)
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		n := len(b.joining)
		b.mu.Unlock()
		if n == len(prompts) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests joined", n, len(prompts))
		}
	}
	go b.loop()
	wg.Wait()
	return outs, errs
}

// TestBatcherMatchesRun checks that requests whose prompts (of different lengths) are prefilled and decoded
// together sample the tokens Run samples for each alone with the same seed, with logprobs agreeing to
// float rounding, whether they share one prefill pass or (with a small cap on its tokens) two.
func TestBatcherMatchesRun(t *testing.T) {
	for _, maxPrefill := range []int{prefillTokens, 10} {
		t.Run(fmt.Sprint(maxPrefill), func(t *testing.T) { testBatcherMatchesRun(t, maxPrefill) })
	}
}

func testBatcherMatchesRun(t *testing.T, maxPrefill int) {
	w := testWeights(t)
	prompts := [][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}, {11, 12, 13, 14}, {20, 21, 22, 23, 24, 25}}
	params := make([]Params, len(prompts))
	ctxs := make([]context.Context, len(prompts))
	for i := range params {
		params[i] = Params{Temperature: 1, Seed: int64(100 + i), MaxTokens: 6, N: 1 + i%2}
		ctxs[i] = context.Background()
	}
	b := NewBatcher(w, nil, byteVocab{})
	b.maxPrefill = maxPrefill
	outs, errs := runHeld(t, b, ctxs, prompts, params)
	for i, pr := range prompts {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		want, err := Run(context.Background(), w, nil, byteVocab{}, pr, params[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		sameCompletions(t, fmt.Sprintf("request %d", i), outs[i], want)
	}
}

func sameCompletions(t *testing.T, what string, got, want []Completion) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d completions, want %d", what, len(got), len(want))
	}
	for c := range want {
		g, w := got[c].Tokens, want[c].Tokens
		if len(g) != len(w) {
			t.Fatalf("%s completion %d: %d tokens, want %d", what, c, len(g), len(w))
		}
		for k := range w {
			if g[k].ID != w[k].ID || math.Abs(float64(g[k].Logprob-w[k].Logprob)) > 1e-5 {
				t.Fatalf("%s completion %d token %d: batched %d (%g), alone %d (%g)", what, c, k,
					g[k].ID, g[k].Logprob, w[k].ID, w[k].Logprob)
			}
		}
	}
}

// TestBatcherPrefillErrors checks that a request cancelled before its prefill and one with a bad token id
// each get their own error while the requests prefilled with them complete as Run does.
func TestBatcherPrefillErrors(t *testing.T) {
	w := testWeights(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	prompts := [][]int{{1, 2, 3}, {4, 5}, {6, 99, 7}, {8, 9, 10, 11}}
	ctxs := []context.Context{context.Background(), cancelled, context.Background(), context.Background()}
	params := make([]Params, len(prompts))
	for i := range params {
		params[i] = Params{Temperature: 1, Seed: int64(i), MaxTokens: 4}
	}
	outs, errs := runHeld(t, NewBatcher(w, nil, byteVocab{}), ctxs, prompts, params)
	if !errors.Is(errs[1], context.Canceled) {
		t.Fatalf("cancelled request: %v", errs[1])
	}
	if !errors.Is(errs[2], model.ErrInput) {
		t.Fatalf("request with token 99 of 64: %v", errs[2])
	}
	for _, i := range []int{0, 3} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		want, err := Run(context.Background(), w, nil, byteVocab{}, prompts[i], params[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		sameCompletions(t, fmt.Sprintf("request %d", i), outs[i], want)
	}
}
