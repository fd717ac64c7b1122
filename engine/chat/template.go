package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/trainyard/trainyard/engine/tokenizer"
)

// Template renders messages with a tokenizer's special tokens.
type Template struct {
	tok                                 *tokenizer.Tokenizer
	start, end, callStart, callEnd, eot int
}

// NewTemplate returns the chat template over tok.
func NewTemplate(tok *tokenizer.Tokenizer) *Template {
	return &Template{tok: tok,
		start: tok.Special(tokenizer.TurnStart), end: tok.Special(tokenizer.TurnEnd),
		callStart: tok.Special(tokenizer.ToolCallStart), callEnd: tok.Special(tokenizer.ToolCallEnd),
		eot: tok.Special(tokenizer.EndOfText)}
}

// builder accumulates tokens with their trainable flags and old logprobs.
type builder struct {
	seq Sequence
}

func (b *builder) add(ids []int, trainable bool, logprobs []float32) {
	nan := float32(math.NaN())
	for i, id := range ids {
		b.seq.Tokens = append(b.seq.Tokens, id)
		b.seq.Trainable = append(b.seq.Trainable, trainable)
		lp := nan
		if trainable && logprobs != nil && i < len(logprobs) {
			lp = logprobs[i]
		}
		b.seq.OldLogprobs = append(b.seq.OldLogprobs, lp)
	}
}

// RenderTraining renders a whole conversation for training; see the package doc for the layout.
func (t *Template) RenderTraining(msgs []Message, tools []Tool) (Sequence, error) {
	var b builder
	if err := t.render(&b, msgs, tools); err != nil {
		return Sequence{}, err
	}
	return b.seq, nil
}

// RenderPrompt renders msgs followed by the assistant header, ready for generation.
func (t *Template) RenderPrompt(msgs []Message, tools []Tool) ([]int, error) {
	var b builder
	if err := t.render(&b, msgs, tools); err != nil {
		return nil, err
	}
	b.add(t.header("assistant"), false, nil)
	return b.seq.Tokens, nil
}

func (t *Template) header(role string) []int {
	return append([]int{t.start}, t.tok.Encode(role+"\n")...)
}

func (t *Template) render(b *builder, msgs []Message, tools []Tool) error {
	sys, rest := "", msgs
	hasSystem := len(msgs) > 0 && (msgs[0].Role == "system" || msgs[0].Role == "developer")
	if hasSystem {
		sys, rest = msgs[0].Content, msgs[1:]
	}
	if hasSystem || len(tools) > 0 {
		toolText, err := RenderTools(tools)
		if err != nil {
			return err
		}
		if sys != "" && toolText != "" {
			sys += "\n\n"
		}
		t.turn(b, "system", sys+toolText)
	}
	for i, m := range rest {
		switch m.Role {
		case "system", "developer":
			t.turn(b, "system", m.Content)
		case "user":
			t.turn(b, "user", m.Content)
		case "tool", "function":
			t.turn(b, "tool", m.Content)
		case "assistant":
			if err := t.assistant(b, m); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		default:
			return fmt.Errorf("%w: message %d has unknown role %q", ErrInvalidMessage, i, m.Role)
		}
	}
	return nil
}

func (t *Template) turn(b *builder, role, text string) {
	b.add(t.header(role), false, nil)
	b.add(t.tok.Encode(text), false, nil)
	b.add([]int{t.end}, false, nil)
	b.add(t.tok.Encode("\n"), false, nil)
}

func (t *Template) assistant(b *builder, m Message) error {
	b.add(t.header("assistant"), false, nil)
	body := m.Tokens
	if body == nil {
		var err error
		if body, err = t.AssistantTokens(m.Content, m.ToolCalls); err != nil {
			return err
		}
	} else if m.Logprobs != nil && len(m.Logprobs) != len(m.Tokens) {
		return fmt.Errorf("%w: %d logprobs for %d tokens", ErrInvalidMessage, len(m.Logprobs), len(m.Tokens))
	}
	b.add(body, m.Trainable, m.Logprobs)
	b.add([]int{t.end}, m.Trainable, nil)
	b.add(t.tok.Encode("\n"), false, nil)
	return nil
}

// AssistantTokens renders an assistant body: content, then one <tool_call>{json}</tool_call> block per call.
func (t *Template) AssistantTokens(content string, calls []ToolCall) ([]int, error) {
	ids := t.tok.Encode(content)
	for _, c := range calls {
		js, err := callJSON(c)
		if err != nil {
			return nil, err
		}
		ids = append(ids, t.callStart)
		ids = append(ids, t.tok.Encode(js)...)
		ids = append(ids, t.callEnd)
	}
	return ids, nil
}

// callJSON writes {"name":...,"arguments":{...}} compactly; arguments must be a JSON object (or empty).
func callJSON(c ToolCall) (string, error) {
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(args)); err != nil || buf.Bytes()[0] != '{' {
		return "", fmt.Errorf("%w: tool call %q arguments are not a JSON object", ErrInvalidMessage, c.Name)
	}
	name, _ := json.Marshal(c.Name)
	return `{"name":` + string(name) + `,"arguments":` + buf.String() + `}`, nil
}
