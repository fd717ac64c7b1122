package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
	"github.com/trainyard/trainyard/serving"
)

// thinkingModel is served from a random-weight Qwen3 snapshot (real tokenizer) whose chat template opens
// a think block in the generation prompt, under a name of the test registry.
var thinkingModel = testBaseModels[0]

var thinking struct {
	once sync.Once
	base *engine.Base
	err  error
}

func thinkingBase(t *testing.T) *engine.Base {
	t.Helper()
	thinking.once.Do(func() {
		dir, err := os.MkdirTemp("", "qwen3-thinking")
		if err != nil {
			thinking.err = err
			return
		}
		defer os.RemoveAll(dir)
		hfsnapshot.WriteQwen3Snapshot(t, dir, hfsnapshot.TinyQwen3, 5)
		hfsnapshot.OpenThinkBlockInPrompt(t, dir)
		thinking.base, thinking.err = engine.OpenSnapshot(thinkingModel, dir)
	})
	if thinking.err != nil {
		t.Fatal(thinking.err)
	}
	return thinking.base
}

func newThinkingEnv(t *testing.T) *chatEnv {
	t.Helper()
	base := thinkingBase(t)
	cfg := serving.Config{BaseModels: []string{thinkingModel}, OpenBase: func(string) (*engine.Base, error) { return base, nil }}
	e := newEnv(t, func(_ *api.Config, d *api.Deps) { d.Chat = serving.New(cfg, d.Models, d.Blobs, d.Logger) })
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)
	return &chatEnv{env: e, url: ts.URL, client: sdkClient(ts.URL, e.key)}
}

type reasoningMessage struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
}

func reasoningAnswer(t *testing.T, e *chatEnv, body map[string]any) reasoningMessage {
	t.Helper()
	res := e.call("POST", "/v1/chat/completions", body) // checked against the document's ChatMessage
	mustStatus(t, res, http.StatusOK)
	var v struct {
		Choices []struct {
			Message reasoningMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(res.Body, &v); err != nil || len(v.Choices) != 1 {
		t.Fatalf("answer %s: %v", res.Body, err)
	}
	return v.Choices[0].Message
}

// TestChatReasoning: a model that reasons in a think block answers with reasoning_content and reasoning
// beside the content; include_reasoning false and chat_template_kwargs enable_thinking false leave them
// out; an assistant turn may send reasoning back; the stream sends reasoning_content deltas first.
func TestChatReasoning(t *testing.T) {
	t.Parallel()
	e := newThinkingEnv(t)
	user := map[string]any{"role": "user", "content": "Think, then answer in JSON."}
	body := func(extra map[string]any) map[string]any {
		b := map[string]any{"model": thinkingModel, "messages": []any{user}, "max_tokens": 24, "seed": 11,
			"response_format": map[string]any{"type": "json_object"}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	m := reasoningAnswer(t, e, body(nil))
	if m.ReasoningContent == nil || *m.ReasoningContent == "" || m.Reasoning == nil || *m.Reasoning != *m.ReasoningContent ||
		m.Content == nil || !json.Valid([]byte(*m.Content)) {
		t.Fatalf("message %+v, want reasoning and a JSON object", m)
	}
	omitted := reasoningAnswer(t, e, body(map[string]any{"include_reasoning": false, "reasoning_effort": "low"}))
	if omitted.ReasoningContent != nil || omitted.Reasoning != nil || *omitted.Content != *m.Content {
		t.Fatalf("include_reasoning false: %+v", omitted)
	}
	off := reasoningAnswer(t, e, body(map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}}))
	if off.ReasoningContent != nil || off.Content == nil || !json.Valid([]byte(*off.Content)) {
		t.Fatalf("enable_thinking false: %+v", off)
	}
	sentBack := body(nil)
	sentBack["messages"] = []any{user, map[string]any{"role": "assistant", "content": *m.Content, "reasoning_content": *m.ReasoningContent},
		map[string]any{"role": "user", "content": "Again."}, map[string]any{"role": "assistant", "content": "ok", "reasoning": nil}, user}
	reasoningAnswer(t, e, sentBack)

	bad := body(map[string]any{"reasoning_effort": "extreme", "include_reasoning": "maybe", "chat_template_kwargs": []any{1}})
	bad["messages"] = []any{user, map[string]any{"role": "assistant", "content": "x", "reasoning_content": 5}}
	got := locs(t, e.call("POST", "/v1/chat/completions", bad).Errors(t))
	want := []string{`["body","messages",1,"reasoning_content"] string_type`, `["body","include_reasoning"] bool_parsing`,
		`["body","reasoning_effort"] literal_error`, `["body","chat_template_kwargs"] dict_type`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("validation:\n got %q\nwant %q", got, want)
	}

	// Streamed through the SDK: reasoning_content deltas (an extra field to it) come before the content.
	p := openai.ChatCompletionNewParams{Model: thinkingModel, MaxTokens: openai.Int(24), Seed: openai.Int(11),
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Think, then answer in JSON.")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &openai.ResponseFormatJSONObjectParam{}}}
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), p)
	var reasoning, content strings.Builder
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			var d struct {
				ReasoningContent string `json:"reasoning_content"`
				Reasoning        string `json:"reasoning"`
			}
			if err := json.Unmarshal([]byte(c.Delta.RawJSON()), &d); err != nil {
				t.Fatal(err)
			}
			if d.ReasoningContent != d.Reasoning || (d.ReasoningContent != "" && content.Len() > 0) {
				t.Fatalf("delta %s", c.Delta.RawJSON())
			}
			reasoning.WriteString(d.ReasoningContent)
			content.WriteString(c.Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if reasoning.String() != *m.ReasoningContent || content.String() != *m.Content {
		t.Fatalf("streamed reasoning %q content %q, want %q and %q", reasoning.String(), content.String(), *m.ReasoningContent, *m.Content)
	}
}
