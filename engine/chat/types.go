// Package chat renders conversations into token sequences with the engine's ChatML-style template, marks
// which tokens are assistant output (trainable), renders OpenAI function-tool definitions into the system
// turn, and parses the tool calls a model writes back out of its text.
//
// Template (the special tokens are single ids, everything else is bytes):
//
//	<|im_start|>system\n{system text}{tools block}<|im_end|>\n
//	<|im_start|>user\n{text}<|im_end|>\n
//	<|im_start|>assistant\n{text}<tool_call>{"name":"f","arguments":{...}}</tool_call><|im_end|>\n
//	<|im_start|>tool\n{tool result}<|im_end|>\n
//	<|im_start|>assistant\n                       <- generation prompt
//
// The trainable tokens of an assistant turn are its content, its tool-call blocks and the closing <|im_end|>;
// the "<|im_start|>assistant\n" header and the newline after <|im_end|> belong to the prompt.
package chat

import (
	"encoding/json"
	"errors"
)

// ErrInvalidMessage reports a message the template cannot render (unknown role, bad tool-call JSON, ...).
var ErrInvalidMessage = errors.New("invalid chat message")

// ToolCall is one function call written by the assistant. Arguments is a JSON object in text form, as in
// the OpenAI API.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Tool is an OpenAI function-tool definition; Parameters is its JSON Schema (may be empty).
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Message is one conversation turn with plain-text content (callers flatten content parts).
type Message struct {
	Role    string // system, developer, user, assistant, tool, function
	Content string
	// Reasoning is an assistant turn's reasoning text (reasoning_content in OpenAI-compatible servers).
	// Hugging Face chat templates that know it (Qwen3) render it; the built-in template ignores it.
	Reasoning  string
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
	// Tokens, when set on an assistant turn, are used verbatim (the exact ids the sampler produced, without
	// the closing <|im_end|>, which the template appends) instead of re-tokenising Content and ToolCalls.
	Tokens []int
	// Logprobs are the sampling-time logprobs of Tokens (same length, or nil when unknown).
	Logprobs []float32
	// Trainable marks an assistant turn whose tokens get loss (SFT: every assistant turn; RL: the Choices).
	Trainable bool
}

// Sequence is a rendered training sequence: Trainable[i] says token i is predicted with loss (from position
// i-1), and OldLogprobs[i] is its sampling-time logprob (NaN when unknown or not trainable).
type Sequence struct {
	Tokens      []int
	Trainable   []bool
	OldLogprobs []float32
}

// NumTrainable returns how many tokens of s carry loss.
func (s Sequence) NumTrainable() int {
	n := 0
	for _, t := range s.Trainable {
		if t {
			n++
		}
	}
	return n
}

// Renderer turns conversations into token ids for a model: the built-in Template, and
// hftemplate.Encoder for a model's own Jinja chat_template with its Hugging Face tokenizer.
type Renderer interface {
	// RenderPrompt renders msgs (tools offered as the template does) followed by the assistant header the
	// model continues from.
	RenderPrompt(msgs []Message, tools []Tool) ([]int, error)
	// RenderTraining renders a whole conversation with loss on the Trainable assistant turns' output.
	RenderTraining(msgs []Message, tools []Tool) (Sequence, error)
}

// KwargsRenderer is a Renderer whose template takes extra variables (chat_template_kwargs in
// OpenAI-compatible servers, e.g. Qwen3's enable_thinking).
type KwargsRenderer interface {
	RenderPromptKwargs(msgs []Message, tools []Tool, kwargs map[string]any) ([]int, error)
}

var _ Renderer = (*Template)(nil)
