package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func samplePrompt(t *testing.T, b *Base) []int {
	p, err := b.RenderPrompt([]Message{{Role: "user", Content: "Tell me something."}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSampleSeedDeterminism: the same seed gives the same completions, also when many requests run at
// once; another seed gives others.
func TestSampleSeedDeterminism(t *testing.T) {
	b := tinyBase(t, 11)
	prompt := samplePrompt(t, b)
	p := SampleParams{Temperature: 1, TopP: 0.95, TopK: 50, Seed: 42, MaxTokens: 24, N: 3}
	ref, err := b.Sample(context.Background(), nil, prompt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([][]Completion, 6)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], _ = b.Sample(context.Background(), nil, prompt, p, nil)
		}(i)
	}
	wg.Wait()
	for _, r := range results {
		if fmt.Sprint(r) != fmt.Sprint(ref) {
			t.Fatal("same seed gave different completions under concurrency")
		}
	}
	p.Seed = 43
	other, _ := b.Sample(context.Background(), nil, prompt, p, nil)
	if fmt.Sprint(other) == fmt.Sprint(ref) {
		t.Fatal("different seeds gave identical completions")
	}
	if ref[0].Text == ref[1].Text && ref[1].Text == ref[2].Text {
		t.Fatal("n completions are identical")
	}
}

// TestSampleStopAndStreaming: a stop sequence cuts text and tokens exactly and streamed tokens equal the
// returned ones; logprobs and top alternatives are consistent.
func TestSampleStopAndStreaming(t *testing.T) {
	b := tinyBase(t, 12)
	prompt := samplePrompt(t, b)
	full, err := b.Sample(context.Background(), nil, prompt, SampleParams{MaxTokens: 30, TopLogprobs: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := full[0].Text
	if len(text) < 6 || full[0].FinishReason != "length" {
		t.Fatalf("greedy completion %q (%s) too short for the test", text, full[0].FinishReason)
	}
	stop := text[3:5]
	var streamed []SampledToken
	out, err := b.Sample(context.Background(), nil, prompt, SampleParams{MaxTokens: 30, Stop: []string{"zzz", stop}, TopLogprobs: 3},
		func(i int, tk SampledToken) { streamed = append(streamed, tk) })
	if err != nil {
		t.Fatal(err)
	}
	c := out[0]
	want := text[:strings.Index(text, stop)]
	if c.Text != want || c.FinishReason != "stop" || len(streamed) != len(c.Tokens) {
		t.Fatalf("stop %q: text %q (%s), want %q; %d streamed vs %d tokens", stop, c.Text, c.FinishReason, want, len(streamed), len(c.Tokens))
	}
	for i, tk := range c.Tokens {
		if len(tk.Top) != 3 || tk.Top[0].Logprob < tk.Top[1].Logprob || tk.Top[0].ID != tk.ID || tk.Logprob > 0 {
			t.Fatalf("token %d: greedy token must be the top alternative: %+v", i, tk)
		}
	}
}

func TestSampleErrors(t *testing.T) {
	b := tinyBase(t, 13)
	prompt := samplePrompt(t, b)
	if _, err := b.Sample(context.Background(), nil, prompt, SampleParams{MaxTokens: 1000}, nil); !errors.Is(err, ErrContextOverflow) {
		t.Fatalf("overflow: %v", err)
	}
	if _, err := b.Sample(context.Background(), nil, prompt, SampleParams{TopP: 2}, nil); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("top_p 2: %v", err)
	}
	if _, err := b.Sample(context.Background(), nil, []int{9999}, SampleParams{MaxTokens: 2}, nil); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("bad token: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Sample(ctx, nil, prompt, SampleParams{MaxTokens: 10}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestNewAdapterIsIdentity: a fresh adapter (B = 0) samples exactly what the base samples.
func TestNewAdapterIsIdentity(t *testing.T) {
	b := tinyBase(t, 14)
	prompt := samplePrompt(t, b)
	a, _ := b.NewAdapter(DefaultLoRAConfig(), 5)
	p := SampleParams{Temperature: 0.8, Seed: 1, MaxTokens: 16, N: 2}
	x, _ := b.Sample(context.Background(), nil, prompt, p, nil)
	y, _ := b.Sample(context.Background(), a, prompt, p, nil)
	if fmt.Sprint(x) != fmt.Sprint(y) {
		t.Fatal("fresh adapter changed the output")
	}
	cj, _ := a.ConfigJSON()
	for _, field := range []string{`"peft_type": "LORA"`, `"task_type": "CAUSAL_LM"`, `"r": 8`, `"lora_alpha": 16`, `"target_modules"`, `"base_model_name_or_path": "test/tiny"`} {
		if !strings.Contains(string(cj), field) {
			t.Fatalf("adapter_config.json lacks %s:\n%s", field, cj)
		}
	}
	if a.SizeBytes() <= 0 {
		t.Fatal("adapter size")
	}
}
