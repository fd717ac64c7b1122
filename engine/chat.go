package engine

import "github.com/trainyard/trainyard/engine/chat"

// Message is one conversation turn; see chat.Message for the field semantics (Tokens/Logprobs carry the
// exact sampled ids of an assistant turn, Trainable marks turns that get loss).
type Message = chat.Message

// ToolCall is a function call written by the assistant (Arguments: a JSON object as text).
type ToolCall = chat.ToolCall

// Tool is an OpenAI function-tool definition (Parameters: JSON Schema).
type Tool = chat.Tool

// Sequence is a rendered training sequence: tokens, which of them get loss, and their sampling-time
// logprobs (NaN where unknown).
type Sequence = chat.Sequence

// ParseToolCalls extracts <tool_call>{"name":...,"arguments":{...}}</tool_call> blocks from model output,
// returning the remaining text and the calls (ids call_0, call_1, ...).
func ParseToolCalls(text string) (content string, calls []ToolCall) { return chat.ParseToolCalls(text) }
