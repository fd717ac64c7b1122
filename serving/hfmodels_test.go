package serving_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
	"github.com/trainyard/trainyard/serving"
)

// Random-weight snapshots on the real tokenizers and chat templates, opened once per test binary: a Qwen3
// whose generation prompt opens a think block (as the thinking-only Qwen3 releases' templates do), the
// plain Qwen3, and a Llama 3 with Llama 3.2's template (tool calls as bare JSON).
const (
	qwenThinking = "test/Qwen3-thinking"
	qwenPlain    = "test/Qwen3"
	llama3       = "test/Llama-3"
)

var snapshots = map[string]*struct {
	once sync.Once
	base *engine.Base
	err  error
}{qwenThinking: {}, qwenPlain: {}, llama3: {}}

func snapshotBase(t *testing.T, name string) *engine.Base {
	t.Helper()
	s := snapshots[name]
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "snapshot")
		if err != nil {
			s.err = err
			return
		}
		defer os.RemoveAll(dir) // the weights and tokenizer are in memory once opened
		switch name {
		case llama3:
			hfsnapshot.WriteLlama3Snapshot(t, dir, hfsnapshot.TinyLlama3, 3)
		default:
			hfsnapshot.WriteQwen3Snapshot(t, dir, hfsnapshot.TinyQwen3, 5)
			if name == qwenThinking {
				hfsnapshot.OpenThinkBlockInPrompt(t, dir)
			}
		}
		s.base, s.err = engine.OpenSnapshot(name, dir)
	})
	if s.base == nil && s.err == nil {
		t.Skip("snapshot not written (see the first test that asked for it)")
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.base
}

// snapshotService serves one snapshot base model (no database: base models need none).
func snapshotService(t *testing.T, name string) *serving.Service {
	base := snapshotBase(t, name)
	return serving.New(serving.Config{BaseModels: []string{name},
		OpenBase: func(string) (*engine.Base, error) { return base, nil }}, nil, nil, zaptest.NewLogger(t))
}

func run(t *testing.T, svc *serving.Service, req serving.Request, emit func(serving.Delta) error) *serving.Result {
	t.Helper()
	g, err := svc.Start(context.Background(), req)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer g.Close()
	res, err := g.Run(context.Background(), emit)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func userRequest(model, text string) serving.Request {
	return serving.Request{Model: model, N: 1, Temperature: 1, TopP: 1, Seed: seed(11), MaxTokens: 24,
		Messages: []trainyard.Message{{Role: "user", Content: trainyard.TextContent(text)}}}
}

var llamaTools = []trainyard.Tool{
	{Type: "function", Function: trainyard.FunctionDefinition{Name: "get_weather", Description: "Weather of a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
	{Type: "function", Function: trainyard.FunctionDefinition{Name: "search"}},
}

// TestLlama3ForcedToolCalls: Llama 3 has no tool-call tokens; tool_choice "required" or a named function
// still makes every choice exactly one call of an allowed tool with a JSON-object arguments, parsed as
// "auto" parses Llama 3's calls, whatever the (random) weights — parallel_tool_calls notwithstanding,
// since the template can express one call only. A budget below the shortest call is a 400.
func TestLlama3ForcedToolCalls(t *testing.T) {
	t.Parallel()
	svc := snapshotService(t, llama3)
	req := userRequest(llama3, "What is the weather in Oslo?")
	// Few and short completions: each step masks a 128k vocabulary through the grammar.
	req.Tools, req.N, req.MaxTokens, req.ParallelToolCalls = llamaTools, 2, 48, true
	for _, tc := range []serving.ToolChoice{{Mode: serving.ToolChoiceRequired}, {Mode: serving.ToolChoiceFunction, Name: "get_weather"}} {
		req.ToolChoice = tc
		for s := int64(1); s <= 1; s++ {
			req.Seed = seed(s)
			res := run(t, svc, req, nil)
			completion := 0
			for _, c := range res.Choices {
				completion += len(c.Logprobs.Content)
				if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || !c.Message.Content.IsZero() {
					t.Fatalf("%+v seed %d: choice %+v, want one tool call and null content", tc, s, c)
				}
				call := c.Message.ToolCalls[0].Function
				if (call.Name != "get_weather" && call.Name != "search") || (tc.Name != "" && call.Name != tc.Name) {
					t.Fatalf("%+v: called %q", tc, call.Name)
				}
				var args map[string]any
				if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || args == nil {
					t.Fatalf("arguments %q are not a JSON object: %v", call.Arguments, err)
				}
			}
			if completion != res.Usage.CompletionTokens {
				t.Fatalf("%d logprobs for %d completion tokens", completion, res.Usage.CompletionTokens)
			}
		}
	}
	// Streamed, the call arrives whole once the turn ends, with the logprobs of all its tokens.
	req.N, req.ToolChoice = 1, serving.ToolChoice{Mode: serving.ToolChoiceRequired}
	var calls, lps int
	res := run(t, svc, req, func(d serving.Delta) error {
		calls += len(d.ToolCalls)
		lps += len(d.Logprobs)
		return nil
	})
	if calls != 1 || lps != res.Usage.CompletionTokens {
		t.Fatalf("streamed %d calls and %d logprobs for %d tokens", calls, lps, res.Usage.CompletionTokens)
	}
	req.MaxTokens = len(`{"name": "search", "parameters": {}}`) // the end of turn does not fit
	g, err := svc.Start(context.Background(), req)
	if err == nil {
		g.Close()
	}
	wantCode(t, err, trainyard.EBADREQUEST)
	if msg := trainyard.ErrorMessage(err); !strings.Contains(msg, "tool_choice required needs at least") {
		t.Fatalf("message %q", msg)
	}
}

// TestReasoningThroughServing: with a generation prompt that opens a think block and response_format
// json_object, the model reasons until the budget makes it close the block, then writes the object: the
// block's text is reasoning_content (and reasoning), the object is the content, every sampled token —
// </think> included — is in the logprobs, and the stream sends the reasoning first and adds up to the
// same choice.
func TestReasoningThroughServing(t *testing.T) {
	t.Parallel()
	svc := snapshotService(t, qwenThinking)
	base := snapshotBase(t, qwenThinking)
	_, thinkEnd, _ := base.ThinkTokens()
	req := userRequest(qwenThinking, "Think, then answer in JSON.")
	req.JSONObject, req.MaxTokens = true, 24
	res := run(t, svc, req, nil)
	c := res.Choices[0]
	m := c.Message
	if m.ReasoningContent == nil || *m.ReasoningContent == "" || m.Reasoning == nil || *m.Reasoning != *m.ReasoningContent {
		t.Fatalf("message %+v, want reasoning", m)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(m.Content.Text()), &obj); err != nil || c.FinishReason != "stop" {
		t.Fatalf("content %q (%s) is not a JSON object: %v", m.Content.Text(), c.FinishReason, err)
	}
	if strings.Contains(*m.ReasoningContent, "</think>") || strings.Contains(m.Content.Text(), "</think>") {
		t.Fatalf("a think marker leaked into the text: %+v", m)
	}
	ids := tokenIDs(c)
	if len(ids) != res.Usage.CompletionTokens || !slicesContains(ids, "token_id:"+itoa(thinkEnd)) {
		t.Fatalf("logprobs %v for %d tokens, want every token with </think>", ids, res.Usage.CompletionTokens)
	}

	var reasoning, content strings.Builder
	var streamed []string
	res2 := run(t, svc, req, func(d serving.Delta) error {
		if d.Reasoning != "" && content.Len() > 0 {
			t.Errorf("reasoning delta %q after content", d.Reasoning)
		}
		reasoning.WriteString(d.Reasoning)
		content.WriteString(d.Content)
		for _, lp := range d.Logprobs {
			streamed = append(streamed, lp.Token)
		}
		return nil
	})
	if reasoning.String() != *m.ReasoningContent || content.String() != m.Content.Text() ||
		strings.Join(streamed, ",") != strings.Join(ids, ",") || *res2.Choices[0].Message.ReasoningContent != *m.ReasoningContent {
		t.Fatalf("stream: reasoning %q content %q, want %q and %q", reasoning.String(), content.String(), *m.ReasoningContent, m.Content.Text())
	}

	// include_reasoning false: the same tokens, without the reasoning fields.
	req.OmitReasoning = true
	res3 := run(t, svc, req, func(d serving.Delta) error {
		if d.Reasoning != "" {
			t.Errorf("reasoning streamed with include_reasoning false: %q", d.Reasoning)
		}
		return nil
	})
	c3 := res3.Choices[0]
	if c3.Message.ReasoningContent != nil || c3.Message.Reasoning != nil || c3.Message.Content.Text() != m.Content.Text() ||
		strings.Join(tokenIDs(c3), ",") != strings.Join(ids, ",") {
		t.Fatalf("include_reasoning false: %+v", c3.Message)
	}
}

// TestReasoningCutShortAndDisabled: a think block cut by max_tokens is all reasoning (null content,
// finish_reason length); with chat_template_kwargs enable_thinking false the template closes an empty
// block in the prompt and the whole output is content.
func TestReasoningCutShortAndDisabled(t *testing.T) {
	t.Parallel()
	svc := snapshotService(t, qwenThinking)
	_, thinkEnd, _ := snapshotBase(t, qwenThinking).ThinkTokens()
	req := userRequest(qwenThinking, "Hi")
	req.MaxTokens = 8
	c := run(t, svc, req, nil).Choices[0]
	if slicesContains(tokenIDs(c), "token_id:"+itoa(thinkEnd)) {
		t.Fatalf("seed 11 closed the block in 8 tokens; pick another seed: %v", tokenIDs(c))
	}
	if c.FinishReason != "length" || !c.Message.Content.IsZero() || c.Message.ReasoningContent == nil || len(c.Logprobs.Content) != 8 {
		t.Fatalf("cut-short choice %+v", c)
	}

	req.TemplateKwargs = map[string]any{"enable_thinking": false}
	res := run(t, svc, req, nil)
	c = res.Choices[0]
	if c.Message.ReasoningContent != nil || c.Message.Content.IsZero() || c.FinishReason != "length" {
		t.Fatalf("thinking disabled: %+v", c)
	}
	plain := run(t, svc, userRequest(qwenThinking, "Hi"), nil)
	// "<think>\n\n</think>\n\n" after the opened "<think>\n": the prompt grew by the closed empty block.
	if res.Usage.PromptTokens <= plain.Usage.PromptTokens {
		t.Fatalf("prompt of %d tokens with enable_thinking false, %d without", res.Usage.PromptTokens, plain.Usage.PromptTokens)
	}
	req.TemplateKwargs = map[string]any{"add_generation_prompt": false}
	if _, err := svc.Start(context.Background(), req); trainyard.ErrorCode(err) != trainyard.EBADREQUEST {
		t.Fatalf("a kwarg the renderer sets: %v, want a 400", err)
	}
}

// TestReasoningSentBack: an assistant turn's reasoning_content (or reasoning) sent back in a later
// request reaches the template, which renders it for the turn after the last user message (Qwen3).
func TestReasoningSentBack(t *testing.T) {
	t.Parallel()
	svc := snapshotService(t, qwenPlain)
	thought := "The user greets me; I should greet back briefly."
	prompt := func(m trainyard.Message) int {
		req := userRequest(qwenPlain, "Hello")
		req.Messages = append(req.Messages, m)
		req.MaxTokens = 1
		return run(t, svc, req, nil).Usage.PromptTokens
	}
	without := prompt(trainyard.Message{Role: "assistant", Content: trainyard.TextContent("Hi!")})
	with := prompt(trainyard.Message{Role: "assistant", Content: trainyard.TextContent("Hi!"), ReasoningContent: &thought})
	newer := prompt(trainyard.Message{Role: "assistant", Content: trainyard.TextContent("Hi!"), Reasoning: &thought})
	if with <= without+len(strings.Fields(thought)) || newer != with {
		t.Fatalf("prompt tokens: %d without reasoning, %d with reasoning_content, %d with reasoning", without, with, newer)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }
