package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
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
	return runHeldAdapters(t, b, ctxs, nil, prompts, params)
}

// runHeldAdapters is runHeld with request i on adapter loras[i] (loras nil: the base model for all).
func runHeldAdapters(t *testing.T, b *Batcher, ctxs []context.Context, loras []*model.LoRA, prompts [][]int, params []Params) ([][]Completion, []error) {
	t.Helper()
	// A request before these (a test's warm-up) ends before its loop does: the loop sets running false, as
	// it returns, only on its next turn. Holding it back before then let that loop take these requests (or
	// clear the hold), and none of them ever joined.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		idle := !b.running
		if idle {
			b.running = true // hold the loop back: Run only queues the request
		}
		b.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batcher's loop is still running")
		}
	}
	outs, errs := make([][]Completion, len(prompts)), make([]error, len(prompts))
	var wg sync.WaitGroup
	for i := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lora *model.LoRA
			if loras != nil {
				lora = loras[i]
			}
			outs[i], errs[i] = b.Run(ctxs[i], lora, prompts[i], params[i], nil)
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
	b := NewBatcher(w, byteVocab{})
	b.maxPrefill = maxPrefill
	outs, errs := runHeld(t, b, ctxs, prompts, params)
	for i, pr := range prompts {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		sameAsAlone(t, w, nil, pr, params[i], fmt.Sprintf("request %d", i), outs[i])
	}
	// The ended requests' caches went back to the batcher's pool; a second round decodes in that memory and
	// samples the same.
	if b.caches.Bytes() == 0 {
		t.Fatal("no cache memory pooled once the requests ended")
	}
	again, errs := runHeld(t, b, ctxs, prompts, params)
	for i := range prompts {
		if errs[i] != nil {
			t.Fatalf("request %d again: %v", i, errs[i])
		}
		sameCompletions(t, fmt.Sprintf("request %d again", i), again[i], outs[i])
	}
}

// sameAsAlone checks that got, what the batcher sampled for a request, is what Run samples for it alone.
func sameAsAlone(t *testing.T, w *model.Weights, lora *model.LoRA, prompt []int, p Params, what string, got []Completion) {
	t.Helper()
	want, err := Run(context.Background(), w, lora, byteVocab{}, prompt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameCompletions(t, what, got, want)
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
	outs, errs := runHeld(t, NewBatcher(w, byteVocab{}), ctxs, prompts, params)
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
		sameAsAlone(t, w, nil, prompts[i], params[i], fmt.Sprintf("request %d", i), outs[i])
	}
}

// TestBatcherAdaptersInOneBatch: requests on three adapters and on the base model, prefilled and decoded
// in the same passes, sample what each samples alone through Run with its adapter, greedily and at
// temperature 1 with the same seed.
func TestBatcherAdaptersInOneBatch(t *testing.T) {
	w := testWeights(t)
	all := [model.NumModules]bool{true, true, true, true, true, true, true}
	var adapters []*model.LoRA
	for i := range 3 {
		a, err := model.NewLoRA(w.Cfg, 2+i, 8, 0, all, int64(40+i))
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range a.Tensors(w.Cfg) {
			for j := range ts.Data {
				ts.Data[j] = float32(math.Sin(float64(3*j+i))) * 0.3
			}
		}
		adapters = append(adapters, a)
	}
	loras := []*model.LoRA{adapters[0], nil, adapters[1], adapters[0], adapters[2], nil}
	prompts := [][]int{{1, 2, 3}, {4, 5}, {6, 7, 8, 9}, {10, 11}, {12}, {13, 14, 15}}
	for _, temp := range []float32{0, 1} {
		params := make([]Params, len(prompts))
		ctxs := make([]context.Context, len(prompts))
		for i := range params {
			params[i] = Params{Temperature: temp, Seed: int64(7 + i), MaxTokens: 8, N: 1 + i%2}
			ctxs[i] = context.Background()
		}
		outs, errs := runHeldAdapters(t, NewBatcher(w, byteVocab{}), ctxs, loras, prompts, params)
		for i, pr := range prompts {
			if errs[i] != nil {
				t.Fatalf("request %d: %v", i, errs[i])
			}
			sameAsAlone(t, w, loras[i], pr, params[i], fmt.Sprintf("temperature %g request %d", temp, i), outs[i])
		}
	}
}

// TestBatcherSharesPrompts: the rollouts of a group (the same prompt and adapter, each its own request)
// prefill the prompt once and sample what each samples alone; a request with that prompt arriving later
// takes it from the prompt cache; the same prompt on another adapter is prefilled again.
func TestBatcherSharesPrompts(t *testing.T) {
	w := testWeights(t)
	all := [model.NumModules]bool{true, true, true, true, true, true, true}
	adapter, _ := model.NewLoRA(w.Cfg, 2, 8, 0, all, 9)
	for _, ts := range adapter.Tensors(w.Cfg) {
		for j := range ts.Data {
			ts.Data[j] = float32(math.Cos(float64(j))) * 0.3
		}
	}
	prompt := []int{3, 1, 4, 1, 5, 9, 2, 6}
	const group = 8
	prompts := make([][]int, group+1)
	params := make([]Params, group+1)
	ctxs := make([]context.Context, group+1)
	loras := make([]*model.LoRA, group+1)
	for i := range prompts {
		prompts[i], ctxs[i] = prompt, context.Background()
		params[i] = Params{Temperature: 1, Seed: int64(i), MaxTokens: 6}
	}
	loras[group] = adapter // the same tokens on an adapter are another prompt
	b := NewBatcher(w, byteVocab{})
	outs, errs := runHeldAdapters(t, b, ctxs, loras, prompts, params)
	shared := 0
	for i := range prompts {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		sameAsAlone(t, w, loras[i], prompts[i], params[i], fmt.Sprintf("request %d", i), outs[i])
		shared += outs[i][0].CachedPrompt
	}
	if want := (group - 1) * len(prompt); shared != want {
		t.Fatalf("%d prompt tokens shared, want %d (the group's prompt prefilled once, the adapter's once)", shared, want)
	}
	later, err := b.Run(context.Background(), nil, prompt, Params{Temperature: 1, Seed: 3, MaxTokens: 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if later[0].CachedPrompt != len(prompt) {
		t.Fatalf("a later request with the prompt shared %d tokens, want %d", later[0].CachedPrompt, len(prompt))
	}
	sameCompletions(t, "later request", later, outs[3])
	other, err := b.Run(context.Background(), nil, []int{3, 1, 4, 1, 5, 9, 2, 7}, Params{Temperature: 1, Seed: 3, MaxTokens: 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if other[0].CachedPrompt != 0 {
		t.Fatalf("another prompt shared %d tokens", other[0].CachedPrompt)
	}
}

// TestBatcherChunkedPrefill: a long prompt that arrives while another request decodes is prefilled a
// chunk per step between its decoding steps, and both sample what each samples alone.
func TestBatcherChunkedPrefill(t *testing.T) {
	w := testWeights(t)
	b := NewBatcher(w, byteVocab{})
	b.chunk = 5
	long := make([]int, 37)
	for i := range long {
		long[i] = (7*i + 3) % 64
	}
	first := Params{Temperature: 1, Seed: 1, MaxTokens: 20}
	second := Params{Temperature: 1, Seed: 2, MaxTokens: 6}
	var wg sync.WaitGroup
	var outs [2][]Completion
	var errs [2]error
	started := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		var once sync.Once
		outs[0], errs[0] = b.Run(context.Background(), nil, []int{1, 2, 3}, first, func(int, SampledToken) {
			once.Do(func() { close(started) }) // decoding has begun: the long prompt arrives mid-decode
		})
	}()
	go func() {
		defer wg.Done()
		<-started
		outs[1], errs[1] = b.Run(context.Background(), nil, long, second, nil)
	}()
	wg.Wait()
	for i, pr := range [][]int{{1, 2, 3}, long} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		sameAsAlone(t, w, nil, pr, []Params{first, second}[i], fmt.Sprintf("request %d", i), outs[i])
	}
}

// systemPrompt is a shared start of two whole prompt blocks and a part of one (a system prompt before
// different questions).
func systemPrompt() []int {
	system := make([]int, 2*promptBlock+5)
	for i := range system {
		system[i] = (5*i + 1) % 64
	}
	return system
}

// TestBatcherSharesStarts: a prompt that starts like a kept one (a shared system prompt, then another
// question) copies the shared blocks and prefills only the rest, and samples what it samples alone.
func TestBatcherSharesStarts(t *testing.T) {
	w := testWeights(t)
	b := NewBatcher(w, byteVocab{})
	system := systemPrompt()
	p := Params{Temperature: 1, Seed: 4, MaxTokens: 5}
	a := append(slices.Clone(system), 10, 11, 12)
	c := append(slices.Clone(system), 20, 21)
	if _, err := b.Run(context.Background(), nil, a, p, nil); err != nil {
		t.Fatal(err)
	}
	got, err := b.Run(context.Background(), nil, c, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].CachedPrompt != 2*promptBlock {
		t.Fatalf("a prompt sharing %d tokens with a kept one took %d from it, want %d (whole blocks)", len(system), got[0].CachedPrompt, 2*promptBlock)
	}
	sameAsAlone(t, w, nil, c, p, "shared start", got)
}

// TestBatcherGroupSharesAStartedPrompt: a group of rollouts whose prompt starts like a kept one (RL groups
// under one system prompt) prefills the rest once, every follower then reads the whole prompt from one
// cache without a copy of its own (so decoding attends to it once for the group), and each samples what
// it samples alone.
func TestBatcherGroupSharesAStartedPrompt(t *testing.T) {
	w := testWeights(t)
	b := NewBatcher(w, byteVocab{})
	system := systemPrompt()
	first := append(slices.Clone(system), 10, 11, 12)
	if _, err := b.Run(context.Background(), nil, first, Params{Temperature: 1, Seed: 1, MaxTokens: 3}, nil); err != nil {
		t.Fatal(err)
	}
	prompt := append(slices.Clone(system), 20, 21)
	var mu sync.Mutex
	var shared []int
	b.followed = func(c *model.Cache) {
		mu.Lock()
		defer mu.Unlock()
		shared = append(shared, c.Shared())
	}
	const group = 4
	prompts, params, ctxs := make([][]int, group), make([]Params, group), make([]context.Context, group)
	for i := range prompts {
		prompts[i], ctxs[i] = prompt, context.Background()
		params[i] = Params{Temperature: 1, Seed: int64(i), MaxTokens: 5}
	}
	outs, errs := runHeldAdapters(t, b, ctxs, nil, prompts, params)
	for i := range prompts {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		sameAsAlone(t, w, nil, prompts[i], params[i], fmt.Sprintf("request %d", i), outs[i])
	}
	if len(shared) != group-1 {
		t.Fatalf("%d followers, want %d", len(shared), group-1)
	}
	for i, n := range shared {
		if n != len(prompt) {
			t.Fatalf("follower %d reads %d of the prompt's %d positions from another cache, the rest its own copy", i, n, len(prompt))
		}
	}
}
