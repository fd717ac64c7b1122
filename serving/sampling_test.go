package serving_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

func TestJSONObjectIsAlwaysValid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.JSONObject, req.N, req.MaxTokens = true, 4, 30
	for s := int64(0); s < 3; s++ {
		req.Seed = seed(s)
		for _, c := range e.complete(t, req).Choices {
			var v map[string]any
			if err := json.Unmarshal([]byte(c.Message.Content.Text()), &v); err != nil || c.FinishReason != "stop" {
				t.Fatalf("seed %d: content %q (%s) is not a JSON object: %v", s, c.Message.Content.Text(), c.FinishReason, err)
			}
		}
	}
	req.MaxTokens = 2
	_, err := e.svc.Start(context.Background(), req)
	wantCode(t, err, trainyard.EBADREQUEST)
}

func TestForcedToolCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.MaxTokens, req.N = 60, 2
	req.Tools = []trainyard.Tool{
		{Type: "function", Function: trainyard.FunctionDefinition{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		{Type: "function", Function: trainyard.FunctionDefinition{Name: "search"}},
	}
	for _, tc := range []serving.ToolChoice{{Mode: serving.ToolChoiceRequired}, {Mode: serving.ToolChoiceFunction, Name: "search"}} {
		req.ToolChoice = tc
		for _, c := range e.complete(t, req).Choices {
			if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
				t.Fatalf("%+v: choice %+v, want exactly one tool call", tc, c)
			}
			call := c.Message.ToolCalls[0]
			var args map[string]any
			if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
				t.Fatalf("arguments %q: %v", call.Function.Arguments, err)
			}
			if (tc.Name != "" && call.Function.Name != tc.Name) || (call.Function.Name != "get_weather" && call.Function.Name != "search") {
				t.Fatalf("%+v: called %q", tc, call.Function.Name)
			}
		}
	}
}

// TestStopSequence picks a printable byte the model samples under a seed and stops on it: the same seed then ends
// just before that byte, with finish_reason stop.
func TestStopSequence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.MaxTokens = 24
	free := e.complete(t, req).Choices[0].Logprobs.Content
	cut := -1
	for i, lp := range free {
		if i > 0 && len(lp.Bytes) == 1 && lp.Bytes[0] >= ' ' && lp.Bytes[0] < 0x7f {
			cut = i
			break
		}
	}
	if cut < 0 {
		t.Fatalf("no printable ASCII byte among %d sampled tokens; pick another seed", len(free))
	}
	req.Stop = []string{string(rune(free[cut].Bytes[0])), "never-sampled"}
	got := e.complete(t, req).Choices[0]
	if got.FinishReason != "stop" || len(got.Logprobs.Content) != cut {
		t.Fatalf("stopped after %d tokens (%s), want %d (stop)", len(got.Logprobs.Content), got.FinishReason, cut)
	}
}

// TestStreamingMatchesAndCancels: deltas add up to the final choices, and an emit error or a cancelled
// context stops sampling early.
func TestStreamingMatchesAndCancels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.N, req.MaxTokens = 2, 40
	g, err := e.svc.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	lps := map[int]int{}
	finished := map[int]string{}
	res, err := g.Run(context.Background(), func(d serving.Delta) error {
		lps[d.Index] += len(d.Logprobs)
		if d.FinishReason != "" {
			finished[d.Index] = d.FinishReason
		}
		return nil
	})
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range res.Choices {
		if lps[i] != len(c.Logprobs.Content) || finished[i] != c.FinishReason {
			t.Fatalf("choice %d: streamed %d logprobs and finish %q, final %d and %q", i, lps[i], finished[i], len(c.Logprobs.Content), c.FinishReason)
		}
	}

	gone := errors.New("client went away")
	g, _ = e.svc.Start(context.Background(), req)
	calls := 0
	_, err = g.Run(context.Background(), func(serving.Delta) error { calls++; return gone })
	g.Close()
	if !errors.Is(err, gone) || calls != 1 {
		t.Fatalf("emit error: err %v after %d calls, want the emit error after 1", err, calls)
	}

	req.MaxTokens = 0 // until the context is full: only cancellation ends this quickly
	g, _ = e.svc.Start(context.Background(), req)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	_, err = g.Run(ctx, func(serving.Delta) error { cancel(); return nil })
	g.Close()
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled run: %v after %v", err, time.Since(start))
	}
}

func TestIgnoreEOSRunsToMaxTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, serving.Config{})
	req := e.request(servingtest.BaseModel)
	req.IgnoreEOS, req.N, req.MaxTokens = true, 3, 30
	res := e.complete(t, req)
	for _, c := range res.Choices {
		if c.FinishReason != "length" || len(c.Logprobs.Content) != 30 {
			t.Fatalf("choice %d: %d tokens (%s), want 30 (length)", c.Index, len(c.Logprobs.Content), c.FinishReason)
		}
	}
}
