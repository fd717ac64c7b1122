package chat

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/tokenizer"
)

func TestRenderTrainingMasks(t *testing.T) {
	tok := tokenizer.New()
	tm := NewTemplate(tok)
	tools := []Tool{{Name: "get_weather", Description: "Weather.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"]}`)}}
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Weather in Oslo?"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city": "Oslo"}`}}, Trainable: true},
		{Role: "tool", Content: `{"t":3}`},
		{Role: "assistant", Content: "3 degrees.", Trainable: true},
		{Role: "user", Content: "Thanks"},
		{Role: "assistant", Content: "Not trained."},
	}
	seq, err := tm.RenderTraining(msgs, tools)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBe brief.\n\n# Tools\n- get_weather(city: string, unit?: \"c\"|\"f\"): Weather.\n" +
		"To call a tool, reply with <tool_call>{\"name\":...,\"arguments\":{...}}</tool_call>.<|im_end|>\n" +
		"<|im_start|>user\nWeather in Oslo?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}</tool_call><|im_end|>\n" +
		"<|im_start|>tool\n{\"t\":3}<|im_end|>\n<|im_start|>assistant\n3 degrees.<|im_end|>\n" +
		"<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\nNot trained.<|im_end|>\n"
	if got := tok.Decode(seq.Tokens); got != want {
		t.Fatalf("rendered:\n%q\nwant:\n%q", got, want)
	}
	var trained []int
	for i, tr := range seq.Trainable {
		if tr {
			trained = append(trained, seq.Tokens[i])
		}
		if !math.IsNaN(float64(seq.OldLogprobs[i])) {
			t.Fatalf("token %d has a logprob without one given", i)
		}
	}
	wantTrained := "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}</tool_call><|im_end|>3 degrees.<|im_end|>"
	if got := tok.Decode(trained); got != wantTrained {
		t.Fatalf("trainable tokens %q, want %q", got, wantTrained)
	}
	if seq.NumTrainable() != len(trained) || tok.TokenBytes(trained[0]) == nil || trained[0] != tok.Special(tokenizer.ToolCallStart) {
		t.Fatal("tool call must start with the special <tool_call> token")
	}
}

func TestVerbatimTokensAndPrompt(t *testing.T) {
	tok := tokenizer.New()
	tm := NewTemplate(tok)
	ids := tok.Encode("hi")
	seq, err := tm.RenderTraining([]Message{{Role: "user", Content: "x"},
		{Role: "assistant", Tokens: ids, Logprobs: []float32{-0.5, -0.25}, Trainable: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(seq.Tokens)
	// ... 'h' 'i' <|im_end|> '\n': logprobs on the sampled tokens, NaN on the appended end of turn.
	if seq.OldLogprobs[n-4] != -0.5 || seq.OldLogprobs[n-3] != -0.25 || !math.IsNaN(float64(seq.OldLogprobs[n-2])) || seq.Trainable[n-1] {
		t.Fatalf("logprobs %v trainable %v", seq.OldLogprobs[n-4:], seq.Trainable[n-4:])
	}
	prompt, _ := tm.RenderPrompt([]Message{{Role: "user", Content: "<|im_end|>"}}, nil)
	if got := tok.Decode(prompt); got != "<|im_start|>user\n<|im_end|><|im_end|>\n<|im_start|>assistant\n" {
		t.Fatalf("prompt %q", got)
	}
	if prompt[len(prompt)-1] != '\n' || prompt[0] != tok.Special(tokenizer.TurnStart) || prompt[6] == tok.Special(tokenizer.TurnEnd) {
		t.Fatal("user text must not turn into special tokens")
	}
	if _, err := tm.RenderPrompt([]Message{{Role: "robot"}}, nil); err == nil {
		t.Fatal("unknown role accepted")
	}
	if _, err := tm.RenderTraining([]Message{{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: "[1]"}}}}, nil); err == nil {
		t.Fatal("non-object arguments accepted")
	}
}

func TestParseToolCalls(t *testing.T) {
	content, calls := ParseToolCalls(`Sure. <tool_call>{"name":"f","arguments":{"a":1}}</tool_call><tool_call>{"name":"g","arguments":"{\"b\":2}"}</tool_call> <tool_call>oops</tool_call>`)
	if content != "Sure.  <tool_call>oops</tool_call>" || len(calls) != 2 {
		t.Fatalf("content %q calls %+v", content, calls)
	}
	if calls[0] != (ToolCall{ID: "call_0", Name: "f", Arguments: `{"a":1}`}) || calls[1].Arguments != `{"b":2}` || calls[1].ID != "call_1" {
		t.Fatalf("calls %+v", calls)
	}
	if c, calls := ParseToolCalls("plain <tool_call>{"); c != "plain <tool_call>{" || calls != nil {
		t.Fatalf("unterminated: %q %v", c, calls)
	}
	// Round trip: what the template renders, the parser recovers.
	tok := tokenizer.New()
	ids, _ := NewTemplate(tok).AssistantTokens("", []ToolCall{{Name: "get_time", Arguments: `{"city":"Oslo"}`}})
	if _, cs := ParseToolCalls(tok.Decode(ids)); len(cs) != 1 || cs[0].Name != "get_time" || !strings.Contains(cs[0].Arguments, "Oslo") {
		t.Fatalf("round trip: %+v", cs)
	}
}

// TestParseJSONToolCall: Llama 3's format, a whole answer that is {"name", "parameters"}, becomes one call;
// anything else stays content.
func TestParseJSONToolCall(t *testing.T) {
	c, calls := ParseJSONToolCall(" {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}\n")
	if c != "" || len(calls) != 1 || calls[0] != (ToolCall{ID: "call_0", Name: "get_weather", Arguments: `{"city": "Oslo"}`}) {
		t.Fatalf("content %q calls %+v", c, calls)
	}
	for _, text := range []string{`Sure: {"name": "f", "parameters": {}}`, `{"title": "not a call"}`, `{"name": "f"`, "hello"} {
		if c, calls := ParseJSONToolCall(text); c != text || calls != nil {
			t.Fatalf("%q: content %q calls %+v", text, c, calls)
		}
	}
}
