package trainyard

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// This file holds the OpenAI chat shapes that several layers share: the API
// validates them, activities turn them into training sequences and serving
// answers with them. Only the fields trainyard uses are typed; request bodies
// are stored verbatim elsewhere, so unknown fields are never lost.

// Message is an OpenAI chat message of any role (system, developer, user,
// assistant, tool, function).
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Refusal    *string    `json:"refusal,omitempty"`
	// ReasoningContent is an assistant turn's reasoning (the text of a model's <think> block), as vLLM
	// names it; Reasoning is the same text under the newer name. Both are set in answers; a request may
	// send back either (reasoning_content wins), and the chat template receives it.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	Reasoning        *string `json:"reasoning,omitempty"`
}

// ReasoningText returns the reasoning of the message under either name, "" when there is none.
func (m *Message) ReasoningText() string {
	switch {
	case m.ReasoningContent != nil:
		return *m.ReasoningContent
	case m.Reasoning != nil:
		return *m.Reasoning
	}
	return ""
}

// Content is a message's content: null, a string, or a list of parts. Only
// text parts carry meaning for a text model; Text joins them.
type Content struct {
	Null  bool
	Str   *string
	Parts []ContentPart
}

// ContentPart is one element of a list content.
type ContentPart struct {
	Type    string  `json:"type"`
	Text    string  `json:"text,omitempty"`
	Refusal *string `json:"refusal,omitempty"`
}

// TextContent returns a string Content.
func TextContent(s string) Content { return Content{Str: &s} }

// Text returns the concatenated text of the content.
func (c Content) Text() string {
	if c.Str != nil {
		return *c.Str
	}
	var b bytes.Buffer
	for _, p := range c.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// IsZero reports whether the content is absent or null.
func (c Content) IsZero() bool { return c.Str == nil && c.Parts == nil }

// MarshalJSON writes null, a string or the parts.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.Str != nil:
		return json.Marshal(*c.Str)
	case c.Parts != nil:
		return json.Marshal(c.Parts)
	default:
		return []byte("null"), nil
	}
}

// UnmarshalJSON accepts null, a string or a list of parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		c.Null = true
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		c.Str = &s
		return nil
	case len(b) > 0 && b[0] == '[':
		parts := []ContentPart{}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		c.Parts = parts
		return nil
	}
	return fmt.Errorf("content must be a string, a list of parts or null")
}

// ToolCall is a function call made by the assistant.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names a function and carries its JSON-encoded arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is an OpenAI function tool definition.
type Tool struct {
	Type     string             `json:"type"`
	Function FunctionDefinition `json:"function"`
}

// FunctionDefinition describes a callable function.
type FunctionDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Choice is one sampled completion as chat completions return it. In a
// trajectory, Choices are the trainable parts.
type Choice struct {
	Index        int             `json:"index"`
	Message      Message         `json:"message"`
	Logprobs     *ChoiceLogprobs `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ChoiceLogprobs holds per-token log probabilities of a Choice.
type ChoiceLogprobs struct {
	Content []TokenLogprob `json:"content"`
	Refusal []TokenLogprob `json:"refusal,omitempty"`
}

// TokenLogprob is the log probability of one sampled token. Token is written
// "token_id:<id>" by trainyard (as the hosted stack does) so the exact token
// can be recovered from a Choice pasted into a trajectory.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is an alternative token at the same position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// MessageOrChoice is one item of a trajectory's messages_and_choices: either
// a plain message or a sampled Choice (recognised, as ART does, by having
// finish_reason, index and message).
type MessageOrChoice struct {
	Message *Message
	Choice  *Choice
}

// UnmarshalJSON decides between a Choice and a Message.
func (m *MessageOrChoice) UnmarshalJSON(b []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	*m = MessageOrChoice{}
	if IsChoiceObject(probe) {
		m.Choice = new(Choice)
		return json.Unmarshal(b, m.Choice)
	}
	m.Message = new(Message)
	return json.Unmarshal(b, m.Message)
}

// MarshalJSON writes whichever side is set.
func (m MessageOrChoice) MarshalJSON() ([]byte, error) {
	if m.Choice != nil {
		return json.Marshal(m.Choice)
	}
	return json.Marshal(m.Message)
}

// IsChoiceObject reports whether a decoded JSON object is a Choice.
func IsChoiceObject(obj map[string]json.RawMessage) bool {
	_, fr := obj["finish_reason"]
	_, ix := obj["index"]
	_, msg := obj["message"]
	return fr && ix && msg
}
