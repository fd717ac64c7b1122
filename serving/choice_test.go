package serving

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

var testTok = tokenizer.New()

// toks spells text as byte tokens; "<tool_call>", "</tool_call>" and "<|pad|>" become their special ids.
func toks(text string) []engine.SampledToken {
	specials := []string{tokenizer.ToolCallStart, tokenizer.ToolCallEnd, tokenizer.Pad}
	var out []engine.SampledToken
	for len(text) > 0 {
		matched := false
		for _, sp := range specials {
			if strings.HasPrefix(text, sp) {
				id := testTok.Special(sp)
				out = append(out, engine.SampledToken{TokenLogprob: engine.TokenLogprob{ID: id, Bytes: testTok.TokenBytes(id), Logprob: -1}})
				text, matched = text[len(sp):], true
				break
			}
		}
		if !matched {
			out = append(out, engine.SampledToken{TokenLogprob: engine.TokenLogprob{ID: int(text[0]), Bytes: []byte{text[0]}, Logprob: -0.5}})
			text = text[1:]
		}
	}
	return out
}

// build runs a builder over tokens, returning the deltas and the choice.
func build(t *testing.T, parseTools bool, tokens []engine.SampledToken, reason string) ([]Delta, trainyard.Choice) {
	t.Helper()
	var deltas []Delta
	b := &choiceBuilder{parseTools: parseTools, isSpecial: testTok.IsSpecial,
		callStart: testTok.Special(tokenizer.ToolCallStart), callEnd: testTok.Special(tokenizer.ToolCallEnd),
		emit: func(d Delta) error { deltas = append(deltas, d); return nil }}
	plain := &choiceBuilder{parseTools: parseTools, isSpecial: b.isSpecial, callStart: b.callStart, callEnd: b.callEnd}
	for _, tk := range tokens {
		if err := b.push(tk); err != nil {
			t.Fatal(err)
		}
		if err := plain.push(tk); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := b.finish(reason)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plain.finish(reason)
	// The streamed deltas add up to the non-streamed choice, token for token.
	var content strings.Builder
	var lps []trainyard.TokenLogprob
	var calls []trainyard.ToolCall
	for _, d := range deltas {
		if !utf8.ValidString(d.Content) {
			t.Errorf("delta content %q is not valid UTF-8", d.Content)
		}
		content.WriteString(d.Content)
		lps = append(lps, d.Logprobs...)
		for _, c := range d.ToolCalls {
			calls = append(calls, c.ToolCall)
		}
	}
	if got := want.Message.Content.Text(); content.String() != got {
		t.Errorf("streamed content %q, non-streamed %q", content.String(), got)
	}
	if len(lps) != len(tokens) || len(want.Logprobs.Content) != len(tokens) {
		t.Errorf("%d streamed / %d non-streamed logprobs for %d tokens", len(lps), len(want.Logprobs.Content), len(tokens))
	}
	if len(calls) != len(want.Message.ToolCalls) {
		t.Errorf("%d streamed calls, %d non-streamed", len(calls), len(want.Message.ToolCalls))
	}
	if last := deltas[len(deltas)-1]; last.FinishReason != ch.FinishReason || ch.FinishReason != want.FinishReason {
		t.Errorf("finish reasons: last delta %q, choice %q, non-streamed %q", last.FinishReason, ch.FinishReason, want.FinishReason)
	}
	return deltas, ch
}

func TestChoiceBuilderHoldsSplitCharacters(t *testing.T) {
	t.Parallel()
	deltas, ch := build(t, false, toks("h\u00e9llo 🚀"), "stop")
	if got := ch.Message.Content.Text(); got != "h\u00e9llo 🚀" {
		t.Fatalf("content %q", got)
	}
	if deltas[1].Content != "\u00e9" || len(deltas[1].Logprobs) != 2 {
		t.Fatalf("second delta %+v, want é with the logprobs of its 2 byte tokens", deltas[1])
	}
	lp := ch.Logprobs.Content[0]
	if lp.Token != "token_id:104" || lp.Logprob != -0.5 || len(lp.Bytes) != 1 || lp.Bytes[0] != 'h' || lp.TopLogprobs == nil {
		t.Fatalf("first logprob %+v", lp)
	}
	if ch.FinishReason != "stop" || ch.Message.Role != "assistant" {
		t.Fatalf("choice %+v", ch)
	}
}

func TestChoiceBuilderParsesToolCalls(t *testing.T) {
	t.Parallel()
	tokens := toks(`Let me look.<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)
	deltas, ch := build(t, true, tokens, "stop")
	if ch.FinishReason != "tool_calls" || ch.Message.Content.Text() != "Let me look." || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("choice %+v", ch)
	}
	call := ch.Message.ToolCalls[0]
	var args map[string]string
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || args["city"] != "Paris" ||
		call.Function.Name != "get_weather" || call.Type != "function" || !strings.HasPrefix(call.ID, "call_") || len(call.ID) != 29 {
		t.Fatalf("call %+v (%v)", call, err)
	}
	last := deltas[len(deltas)-2]
	if len(last.ToolCalls) != 1 || last.ToolCalls[0].Index != 0 || len(last.Logprobs) != len(toks(`<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)) {
		t.Fatalf("tool call delta %+v", last)
	}
}

func TestChoiceBuilderToolCallsWithoutContentHaveNullContent(t *testing.T) {
	t.Parallel()
	_, ch := build(t, true, toks(`<tool_call>{"name":"a","arguments":{}}</tool_call><tool_call>{"name":"b","arguments":{}}</tool_call>`), "stop")
	if !ch.Message.Content.IsZero() || len(ch.Message.ToolCalls) != 2 || ch.Message.ToolCalls[0].ID == ch.Message.ToolCalls[1].ID {
		t.Fatalf("choice message %+v", ch.Message)
	}
	js, _ := json.Marshal(ch.Message)
	if !strings.Contains(string(js), `"content":null`) {
		t.Fatalf("message JSON %s, want null content", js)
	}
}

func TestChoiceBuilderKeepsBrokenCallsAsContent(t *testing.T) {
	t.Parallel()
	_, ch := build(t, true, toks(`<tool_call>not json</tool_call>`), "stop")
	if ch.FinishReason != "stop" || len(ch.Message.ToolCalls) != 0 || ch.Message.Content.Text() != "not json" {
		t.Fatalf("choice %+v", ch)
	}
	_, ch = build(t, true, toks(`ok<tool_call>{"name":"a"`), "length")
	if ch.FinishReason != "length" || ch.Message.Content.Text() != `ok{"name":"a"` {
		t.Fatalf("unterminated call: %+v", ch)
	}
}

func TestChoiceBuilderWithoutToolParsingAndSpecials(t *testing.T) {
	t.Parallel()
	_, ch := build(t, false, toks(`a<|pad|>b<tool_call>{"name":"x","arguments":{}}</tool_call>`), "stop")
	if len(ch.Message.ToolCalls) != 0 || ch.Message.Content.Text() != `ab{"name":"x","arguments":{}}` || ch.FinishReason != "stop" {
		t.Fatalf("choice %+v", ch)
	}
	if got := ch.Logprobs.Content[1].Token; got != "token_id:261" {
		t.Fatalf("the special token is listed as %q, want token_id:261", got)
	}
}

// TestChoiceBPETokens: tokens of a BPE vocabulary hold several bytes, and may end inside a character (an
// emoji split over two tokens): no delta carries half a character.
func TestChoiceBPETokens(t *testing.T) {
	emoji := "\U0001F600" // 4 bytes
	parts := [][]byte{[]byte("Hi "), []byte(emoji[:2]), []byte(emoji[2:] + " ok")}
	var deltas []Delta
	b := &choiceBuilder{isSpecial: func(int) bool { return false }, callStart: -1, callEnd: -1,
		emit: func(d Delta) error { deltas = append(deltas, d); return nil }}
	for i, p := range parts {
		if err := b.push(engine.SampledToken{TokenLogprob: engine.TokenLogprob{ID: 1000 + i, Bytes: p}}); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := b.finish("stop")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deltas {
		if !utf8.ValidString(d.Content) {
			t.Fatalf("delta %q is not valid UTF-8", d.Content)
		}
	}
	if len(deltas) != 3 || ch.Message.Content.Text() != "Hi "+emoji+" ok" {
		t.Fatalf("deltas %+v, content %q", deltas, ch.Message.Content.Text())
	}
}

// TestChoiceWholeAnswerToolCall: a model without tool-call tokens (Llama 3) answers a call as one JSON
// object; the output is held to the end and becomes a tool call, or content when it is not one.
func TestChoiceWholeAnswerToolCall(t *testing.T) {
	run := func(text string) (int, trainyard.Choice) {
		n := 0
		b := &choiceBuilder{parseTools: true, isSpecial: func(int) bool { return false }, callStart: -1, callEnd: -1,
			parseWhole: chat.ParseJSONToolCall, emit: func(Delta) error { n++; return nil }}
		for _, tk := range toks(text) {
			if err := b.push(tk); err != nil {
				t.Fatal(err)
			}
		}
		ch, err := b.finish("stop")
		if err != nil {
			t.Fatal(err)
		}
		return n, ch
	}
	n, ch := run(`{"name": "get_weather", "parameters": {"city": "Oslo"}}`)
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Arguments != `{"city": "Oslo"}` ||
		len(ch.Logprobs.Content) != 55 || n != 2 {
		t.Fatalf("%d deltas, choice %+v", n, ch)
	}
	if _, ch := run("It is sunny."); ch.FinishReason != "stop" || ch.Message.Content.Text() != "It is sunny." || len(ch.Message.ToolCalls) != 0 {
		t.Fatalf("choice %+v", ch)
	}
}

// Think markers of a made-up vocabulary: added tokens that are not special, as in Qwen3's tokenizer.
const (
	thinkID    = 1000
	thinkEndID = 1001
)

var testThinking = thinking{on: true, start: thinkID, end: thinkEndID}

// thinkToks spells text as toks does, with "<think>" and "</think>" as the think markers.
func thinkToks(text string) []engine.SampledToken {
	var out []engine.SampledToken
	for text != "" {
		i := strings.Index(text, "<")
		if i < 0 {
			i = len(text)
		}
		out = append(out, toks(text[:i])...)
		text = text[i:]
		switch {
		case strings.HasPrefix(text, "<think>"):
			out = append(out, engine.SampledToken{TokenLogprob: engine.TokenLogprob{ID: thinkID, Bytes: []byte("<think>"), Logprob: -2}})
			text = text[len("<think>"):]
		case strings.HasPrefix(text, "</think>"):
			out = append(out, engine.SampledToken{TokenLogprob: engine.TokenLogprob{ID: thinkEndID, Bytes: []byte("</think>"), Logprob: -2}})
			text = text[len("</think>"):]
		case text != "":
			j := strings.IndexAny(text[1:], "<")
			if j < 0 {
				j = len(text) - 1
			}
			out = append(out, toks(text[:j+1])...)
			text = text[j+1:]
		}
	}
	return out
}

// buildThinking runs a streaming and a non-streaming builder with reasoning parsing over tokens and checks
// they agree: the reasoning deltas, accumulated, are the message's reasoning and all come before any
// content; every token is in the logprobs exactly once.
func buildThinking(t *testing.T, setup func(b *choiceBuilder), tokens []engine.SampledToken, reason string) ([]Delta, trainyard.Choice) {
	t.Helper()
	var deltas []Delta
	mk := func(emit func(Delta) error) *choiceBuilder {
		b := &choiceBuilder{parseTools: true, isSpecial: testTok.IsSpecial, think: testThinking,
			callStart: testTok.Special(tokenizer.ToolCallStart), callEnd: testTok.Special(tokenizer.ToolCallEnd), emit: emit}
		if setup != nil {
			setup(b)
		}
		b.startThinking()
		return b
	}
	b := mk(func(d Delta) error { deltas = append(deltas, d); return nil })
	plain := mk(nil)
	for _, tk := range tokens {
		if err := b.push(tk); err != nil {
			t.Fatal(err)
		}
		if err := plain.push(tk); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := b.finish(reason)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plain.finish(reason)
	var reasoning, content strings.Builder
	var lps []trainyard.TokenLogprob
	sawContent := false
	for _, d := range deltas {
		if d.Reasoning != "" && sawContent {
			t.Errorf("reasoning delta %q after content", d.Reasoning)
		}
		sawContent = sawContent || d.Content != "" || len(d.ToolCalls) > 0
		reasoning.WriteString(d.Reasoning)
		content.WriteString(d.Content)
		lps = append(lps, d.Logprobs...)
	}
	if got := reasoningOfMsg(want.Message); reasoning.String() != got || reasoningOfMsg(ch.Message) != got {
		t.Errorf("streamed reasoning %q, non-streamed %q", reasoning.String(), got)
	}
	if content.String() != want.Message.Content.Text() {
		t.Errorf("streamed content %q, non-streamed %q", content.String(), want.Message.Content.Text())
	}
	if len(lps) != len(tokens) || len(want.Logprobs.Content) != len(tokens) {
		t.Fatalf("%d streamed / %d non-streamed logprobs for %d tokens", len(lps), len(want.Logprobs.Content), len(tokens))
	}
	for i, tk := range tokens {
		if lps[i].Token != tokenName(tk.ID) || want.Logprobs.Content[i].Token != tokenName(tk.ID) {
			t.Fatalf("logprob %d is %s, token %d", i, lps[i].Token, tk.ID)
		}
	}
	return deltas, ch
}

func reasoningOfMsg(m trainyard.Message) string {
	if m.ReasoningContent == nil {
		return ""
	}
	return *m.ReasoningContent
}

// TestChoiceReasoning: the text of a leading think block is reasoning (without the markers and the
// newlines framing it), the rest is content.
func TestChoiceReasoning(t *testing.T) {
	t.Parallel()
	deltas, ch := buildThinking(t, nil, thinkToks("<think>\nThe user says hi.\nBe nice.\n</think>\n\nHello!"), "stop")
	m := ch.Message
	if m.ReasoningContent == nil || *m.ReasoningContent != "The user says hi.\nBe nice." || m.Reasoning == nil ||
		*m.Reasoning != *m.ReasoningContent || m.Content.Text() != "Hello!" || ch.FinishReason != "stop" {
		t.Fatalf("message %+v", m)
	}
	for _, d := range deltas {
		if d.Reasoning != "" || d.Content != "" {
			if d.Reasoning == "" {
				t.Fatalf("first delta with text %+v, want reasoning", d)
			}
			break
		}
	}
	js, _ := json.Marshal(m)
	if !strings.Contains(string(js), `"reasoning_content":"The user says hi.\nBe nice."`) ||
		!strings.Contains(string(js), `"reasoning":"The user says hi.\nBe nice."`) {
		t.Fatalf("message JSON %s", js)
	}
}

// TestChoiceReasoningOpenedByPrompt: when the generation prompt ends inside a think block, the output
// starts as reasoning without a <think> of its own.
func TestChoiceReasoningOpenedByPrompt(t *testing.T) {
	t.Parallel()
	inside := func(b *choiceBuilder) { b.think.inside = true }
	_, ch := buildThinking(t, inside, thinkToks("\nhmm\n</think>\n\nHi"), "stop")
	if reasoningOfMsg(ch.Message) != "hmm" || ch.Message.Content.Text() != "Hi" {
		t.Fatalf("message %+v", ch.Message)
	}
}

// TestChoiceReasoningCutShort: a block cut by max_tokens is all reasoning; content is null.
func TestChoiceReasoningCutShort(t *testing.T) {
	t.Parallel()
	_, ch := buildThinking(t, nil, thinkToks("<think>\nstill thinking\n"), "length")
	if reasoningOfMsg(ch.Message) != "still thinking" || !ch.Message.Content.IsZero() || ch.FinishReason != "length" {
		t.Fatalf("choice %+v", ch)
	}
	js, _ := json.Marshal(ch.Message)
	if !strings.Contains(string(js), `"content":null`) {
		t.Fatalf("message JSON %s, want null content", js)
	}
}

// TestChoiceReasoningThenToolCall: tool calls are read after the think block only; a call written while
// reasoning is reasoning text.
func TestChoiceReasoningThenToolCall(t *testing.T) {
	t.Parallel()
	text := `<think>I could write {"name":"x"} <tool_call>{"name":"no","arguments":{}}</tool_call> here.</think>` + "\n\n" +
		`<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`
	_, ch := buildThinking(t, nil, thinkToks(text), "stop")
	m := ch.Message
	if len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "get_weather" || !m.Content.IsZero() || ch.FinishReason != "tool_calls" {
		t.Fatalf("choice %+v", ch)
	}
	if r := reasoningOfMsg(m); !strings.Contains(r, `"name":"no"`) || !strings.HasPrefix(r, "I could write") {
		t.Fatalf("reasoning %q", r)
	}
}

// TestChoiceReasoningOmitted: include_reasoning false drops the reasoning from the message and the
// stream, and the logprobs still list every token.
func TestChoiceReasoningOmitted(t *testing.T) {
	t.Parallel()
	omit := func(b *choiceBuilder) { b.omitReasoning = true }
	deltas, ch := buildThinking(t, omit, thinkToks("<think>secret</think>\n\nAnswer"), "stop")
	js, _ := json.Marshal(ch.Message)
	if ch.Message.ReasoningContent != nil || ch.Message.Reasoning != nil || strings.Contains(string(js), "secret") ||
		ch.Message.Content.Text() != "Answer" {
		t.Fatalf("message %s", js)
	}
	for _, d := range deltas {
		if d.Reasoning != "" {
			t.Fatalf("delta %+v carries reasoning", d)
		}
	}
}

// TestChoiceReasoningOnlyAtTheStart: a think marker after other output, or with reasoning parsing off
// (enable_thinking false), is content like any text.
func TestChoiceReasoningOnlyAtTheStart(t *testing.T) {
	t.Parallel()
	_, ch := buildThinking(t, nil, thinkToks("ok <think>x</think>"), "stop")
	if ch.Message.ReasoningContent != nil || ch.Message.Content.Text() != "ok <think>x</think>" {
		t.Fatalf("message %+v", ch.Message)
	}
	off := func(b *choiceBuilder) { b.think = thinking{start: -1, end: -1} }
	_, ch = buildThinking(t, off, thinkToks("<think>x</think>y"), "stop")
	if ch.Message.ReasoningContent != nil || ch.Message.Content.Text() != "<think>x</think>y" {
		t.Fatalf("message %+v", ch.Message)
	}
}
