package serving

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// choiceBuilder turns the tokens of one completion, as the sampler streams them, into deltas and the final
// Choice. Streaming and non-streaming answers go through the same code, so a streamed choice, accumulated,
// equals the non-streamed one. Content is released only up to a complete UTF-8 character; with tool
// parsing on, a <tool_call> … </tool_call> block is held until it closes and then becomes one tool call
// (or content again, if its JSON does not parse). Special tokens never appear in content (vLLM's
// skip_special_tokens default), but every token, special or not, is listed in the logprobs, which are
// what makes a choice trainable. A model without tool-call tokens (Llama 3 writes a call as the whole
// answer in JSON) has its whole output held until it ends, then parsed by parseWhole.
//
// A model that reasons in a <think> … </think> block (think.on) has the block's text sent as reasoning
// (vLLM's reasoning parser): the block is recognised when <think> is the first token of the output, or
// when the prompt opened it (think.inside: the output starts in it). Only what follows </think> is content
// and is parsed for tool calls; a block cut short (max_tokens) is reasoning to the end. The think tokens
// themselves, like every token, are in the logprobs, and only there.
type choiceBuilder struct {
	index      int
	parseTools bool
	callStart  int // -1 when the model has no tool-call tokens
	callEnd    int
	isSpecial  func(id int) bool
	emit       func(Delta) error // nil when not streaming
	// parseWhole, when set, parses the complete output for tool calls (parseTools without call tokens).
	parseWhole func(text string) (string, []engine.ToolCall)

	think         thinking
	omitReasoning bool // include_reasoning false: reasoning is neither streamed nor in the message

	started   bool // a token has been pushed
	inThink   bool // the tokens are reasoning
	hadThink  bool // the output had a think block
	trimLead  bool // newlines at the start of the block's text, or of the content after it, are dropped
	heldNL    string
	reasoning strings.Builder

	pending []engine.SampledToken // content (or reasoning) tokens not yet released
	inCall  bool
	call    []engine.SampledToken // the open tool-call block, <tool_call> included

	content  strings.Builder
	calls    []trainyard.ToolCall
	logprobs []trainyard.TokenLogprob
}

// startThinking puts a builder whose prompt opened a think block inside it.
func (b *choiceBuilder) startThinking() {
	if b.think.on && b.think.inside {
		b.inThink, b.hadThink, b.trimLead = true, true, true
	}
}

// push takes the next token of the completion.
func (b *choiceBuilder) push(t engine.SampledToken) error {
	first := !b.started
	b.started = true
	switch {
	case b.inThink:
		b.pending = append(b.pending, t)
		if t.ID == b.think.end {
			b.inThink, b.trimLead = false, true
			return b.releaseReasoning(len(b.pending), true)
		}
		return b.releaseReasoning(completeTokens(b.pending), false)
	case first && b.think.on && t.ID == b.think.start:
		b.inThink, b.hadThink, b.trimLead = true, true, true
		b.pending = append(b.pending, t) // listed with the first reasoning delta
		return nil
	case b.inCall:
		b.call = append(b.call, t)
		if t.ID == b.callEnd {
			return b.closeCall()
		}
		return nil
	case b.parseTools && t.ID == b.callStart:
		if err := b.release(len(b.pending)); err != nil {
			return err
		}
		b.inCall, b.call = true, append(b.call[:0], t)
		return nil
	}
	b.pending = append(b.pending, t)
	if b.parseTools && b.parseWhole != nil {
		return nil // held until finish: the answer may turn out to be a call
	}
	return b.release(completeTokens(b.pending))
}

// finishWhole turns the held output into one tool call when it is one, and leaves it as content otherwise.
func (b *choiceBuilder) finishWhole() error {
	var text strings.Builder
	for _, t := range b.pending {
		if !b.isSpecial(t.ID) {
			text.Write(t.Bytes)
		}
	}
	if _, calls := b.parseWhole(text.String()); len(calls) == 1 {
		b.call, b.pending = b.pending, nil
		return b.emitCall(calls[0])
	}
	return nil
}

// finish releases whatever is held (an unterminated call block becomes content) and sends the finish
// reason. It returns the choice.
func (b *choiceBuilder) finish(engineReason string) (trainyard.Choice, error) {
	if b.inThink {
		b.inThink = false
		if err := b.releaseReasoning(len(b.pending), true); err != nil {
			return trainyard.Choice{}, err
		}
	}
	if b.inCall {
		b.pending, b.inCall = append(b.pending, b.call...), false
	}
	if b.parseTools && b.parseWhole != nil {
		if err := b.finishWhole(); err != nil {
			return trainyard.Choice{}, err
		}
	}
	if err := b.release(len(b.pending)); err != nil {
		return trainyard.Choice{}, err
	}
	reason := engineReason
	if reason == "stop" && len(b.calls) > 0 {
		reason = "tool_calls"
	}
	if b.emit != nil {
		if err := b.emit(Delta{Index: b.index, FinishReason: reason}); err != nil {
			return trainyard.Choice{}, err
		}
	}
	msg := trainyard.Message{Role: "assistant", ToolCalls: b.calls}
	if text := b.content.String(); text != "" || (len(b.calls) == 0 && !b.hadThink) {
		// OpenAI sends null content next to tool calls, vLLM next to reasoning.
		msg.Content = trainyard.TextContent(text)
	}
	if r := b.reasoning.String(); r != "" && !b.omitReasoning {
		// Both names carry the text: vLLM answered reasoning_content, newer vLLM and OpenRouter-style
		// clients read reasoning, and the OpenAPI document lists both.
		msg.ReasoningContent, msg.Reasoning = &r, &r
	}
	lps := b.logprobs
	if lps == nil {
		lps = []trainyard.TokenLogprob{}
	}
	return trainyard.Choice{Index: b.index, Message: msg, FinishReason: reason,
		Logprobs: &trainyard.ChoiceLogprobs{Content: lps}}, nil
}

// release sends the first n pending tokens as content.
func (b *choiceBuilder) release(n int) error {
	if n == 0 {
		return nil
	}
	text, lps := b.take(n, false)
	b.content.WriteString(text)
	if b.emit == nil {
		return nil
	}
	return b.emit(Delta{Index: b.index, Content: text, Logprobs: lps})
}

// take removes the first n pending tokens, lists them in the logprobs and returns their text: special
// tokens left out, the think markers too in reasoning (in content they are text the model wrote), and
// leading newlines dropped while trimLead holds (Qwen3 writes "<think>\n" and "</think>\n\n" around its
// reasoning; its chat template strips them the same way when the turn is sent back).
func (b *choiceBuilder) take(n int, reasoning bool) (string, []trainyard.TokenLogprob) {
	toks := b.pending[:n]
	var sb strings.Builder
	for _, t := range toks {
		if b.isSpecial(t.ID) || (reasoning && (t.ID == b.think.start || t.ID == b.think.end)) {
			continue
		}
		sb.Write(t.Bytes)
	}
	lps := wireLogprobs(toks)
	b.pending = append(b.pending[:0], b.pending[n:]...)
	b.logprobs = append(b.logprobs, lps...)
	text := sb.String()
	if b.trimLead {
		if text = strings.TrimLeft(text, "\n"); text != "" {
			b.trimLead = false
		}
	}
	return text, lps
}

// releaseReasoning sends the first n pending tokens as reasoning. Trailing newlines are held back until
// more reasoning follows, and dropped when the block ends (closed), so the reasoning is the block's text
// without the newlines that frame it.
func (b *choiceBuilder) releaseReasoning(n int, closed bool) error {
	if n == 0 {
		return nil
	}
	text, lps := b.take(n, true)
	if text != "" {
		text = b.heldNL + text
		b.heldNL = ""
	}
	body := strings.TrimRight(text, "\n")
	if !closed {
		b.heldNL += text[len(body):]
	}
	text = body
	if b.omitReasoning {
		text = ""
	}
	b.reasoning.WriteString(text)
	if b.emit == nil {
		return nil
	}
	return b.emit(Delta{Index: b.index, Reasoning: text, Logprobs: lps})
}

// closeCall parses the finished block with the engine's parser: one well-formed call becomes a tool call,
// anything else stays content so nothing the model wrote is lost.
func (b *choiceBuilder) closeCall() error {
	block := b.call
	b.call, b.inCall = nil, false
	var text strings.Builder
	for _, t := range block {
		text.Write(t.Bytes)
	}
	rest, calls := engine.ParseToolCalls(text.String())
	if len(calls) != 1 || strings.TrimSpace(rest) != "" {
		b.pending = append(b.pending, block...)
		return b.release(len(b.pending))
	}
	b.call = block
	return b.emitCall(calls[0])
}

// emitCall records the call written by the tokens in b.call (listed in the logprobs) and streams it.
func (b *choiceBuilder) emitCall(c engine.ToolCall) error {
	block := b.call
	b.call = nil
	call := trainyard.ToolCall{ID: newCallID(), Type: "function",
		Function: trainyard.FunctionCall{Name: c.Name, Arguments: c.Arguments}}
	lps := wireLogprobs(block)
	b.calls = append(b.calls, call)
	b.logprobs = append(b.logprobs, lps...)
	if b.emit == nil {
		return nil
	}
	return b.emit(Delta{Index: b.index, ToolCalls: []ToolCallDelta{{Index: len(b.calls) - 1, ToolCall: call}},
		Logprobs: lps})
}

// completeTokens returns how many leading tokens can be released without splitting a UTF-8 character
// across deltas (JSON strings must be valid UTF-8; the byte-level tokenizer writes characters bytewise,
// and a BPE token may hold part of one). A token holding the start of an unfinished character is held
// back whole.
func completeTokens(toks []engine.SampledToken) int {
	n := len(toks)
	// An unfinished character has at most 3 bytes: gather the last tokens' bytes until there are 4.
	var tail []byte
	for i := n - 1; i >= 0 && len(tail) < utf8.UTFMax; i-- {
		tail = append(append([]byte(nil), toks[i].Bytes...), tail...)
	}
	k := 0 // bytes of the unfinished character at the end
	for j := len(tail) - 1; j >= 0 && j >= len(tail)-3; j-- {
		if utf8.RuneStart(tail[j]) {
			if tail[j] >= utf8.RuneSelf && !utf8.FullRune(tail[j:]) {
				k = len(tail) - j
			}
			break
		}
	}
	i := n
	for removed := 0; removed < k && i > 0; {
		i--
		removed += len(toks[i].Bytes)
	}
	return i
}

// wireLogprobs writes tokens the way the hosted stack does: "token_id:<id>", so a Choice pasted into a
// trajectory gives back the exact sampled ids.
func wireLogprobs(toks []engine.SampledToken) []trainyard.TokenLogprob {
	out := make([]trainyard.TokenLogprob, len(toks))
	for i, t := range toks {
		top := make([]trainyard.TopLogprob, len(t.Top))
		for j, a := range t.Top {
			top[j] = trainyard.TopLogprob{Token: tokenName(a.ID), Logprob: wireLogprob(a.Logprob), Bytes: byteInts(a.Bytes)}
		}
		out[i] = trainyard.TokenLogprob{Token: tokenName(t.ID), Logprob: wireLogprob(t.Logprob),
			Bytes: byteInts(t.Bytes), TopLogprobs: top}
	}
	return out
}

func tokenName(id int) string { return "token_id:" + strconv.Itoa(id) }

// minLogprob stands in for -Inf, which JSON cannot carry (the OpenAPI document's default).
const minLogprob = -9999.0

// wireLogprob converts a float32 logprob to the float64 with the same shortest decimal form, so the JSON
// carries -0.25 rather than float32 noise such as -0.25000000372529.
func wireLogprob(lp float32) float64 {
	if math.IsNaN(float64(lp)) || lp < minLogprob {
		return minLogprob
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(lp), 'g', -1, 32), 64)
	return v
}

func byteInts(bs []byte) []int {
	out := make([]int, len(bs))
	for i, c := range bs {
		out[i] = int(c)
	}
	return out
}
