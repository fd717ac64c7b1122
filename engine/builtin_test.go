package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestBuiltinTinyChat checks the committed base model: it loads, knows who it is, and answers a request
// for an offered tool with a well-formed call in the template's format.
func TestBuiltinTinyChat(t *testing.T) {
	if got := BuiltinNames(); len(got) != 1 || got[0] != "trainyard/tiny-chat" {
		t.Fatalf("builtin names %v", got)
	}
	b, err := OpenBuiltin("trainyard/tiny-chat")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "trainyard/tiny-chat" || b.ContextLength() != 1024 || b.NumParams() < 2_000_000 {
		t.Fatalf("name %s context %d params %d", b.Name(), b.ContextLength(), b.NumParams())
	}
	ctx := context.Background()
	ask := func(msgs []Message, tools []Tool) string {
		prompt, err := b.RenderPrompt(msgs, tools)
		if err != nil {
			t.Fatal(err)
		}
		out, err := b.Sample(ctx, nil, prompt, SampleParams{MaxTokens: 80}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Text
	}
	if got := ask([]Message{{Role: "user", Content: "Who are you?"}}, nil); !strings.Contains(got, "Tiny Chat") {
		t.Errorf("who are you: %q", got)
	}
	tools := []Tool{{Name: "get_weather", Description: "Get the current weather for a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	text := ask([]Message{{Role: "user", Content: "What's the weather in Paris?"}}, tools)
	if _, calls := ParseToolCalls(text); len(calls) != 1 || calls[0].Name != "get_weather" || !json.Valid([]byte(calls[0].Arguments)) {
		t.Errorf("tool call: %q", text)
	}
	if _, err := OpenBuiltin("nope/model"); err == nil {
		t.Error("unknown builtin accepted")
	}
}
