package serving

import (
	"github.com/trainyard/trainyard"
)

// Tool choice modes, as OpenAI names them.
const (
	ToolChoiceNone     = "none"     // tools are shown to the model, calls are not parsed
	ToolChoiceAuto     = "auto"     // the model decides; calls it writes are parsed
	ToolChoiceRequired = "required" // the output is forced to be one or more calls
	ToolChoiceFunction = "function" // the output is forced to be one call of ToolChoice.Name
)

// ToolChoice selects how tools are used.
type ToolChoice struct {
	Mode string // one of the ToolChoice* constants
	Name string // the function for ToolChoiceFunction
}

// Request is one chat completion, validated by the caller (the api package checks ranges and shapes and
// answers 422 itself); Service.Start only refuses what needs the model or the database to know.
type Request struct {
	AccountID string
	// Model is the requested name: a base model, or wandb-artifact:///ENTITY/PROJECT/NAME[:stepN|:latest].
	Model    string
	Messages []trainyard.Message
	Tools    []trainyard.Tool
	// ToolChoice applies when Tools is not empty.
	ToolChoice ToolChoice
	// ParallelToolCalls lets a forced tool choice produce more than one call.
	ParallelToolCalls bool
	// JSONObject constrains the content to one JSON object (response_format json_object).
	JSONObject bool
	// IgnoreEOS keeps the end-of-turn tokens from being sampled (vLLM's ignore_eos), so completions run to
	// MaxTokens or the end of the context. It yields to JSONObject and forced tool calls, which must end.
	IgnoreEOS bool
	// OmitReasoning drops reasoning_content and reasoning from the answer (include_reasoning false); the
	// reasoning tokens are still generated and listed in the logprobs.
	OmitReasoning bool
	// TemplateKwargs are extra chat-template variables (chat_template_kwargs), e.g. enable_thinking.
	// enable_thinking false also turns reasoning parsing off: the whole output is content.
	TemplateKwargs map[string]any

	Temperature float64 // 0 = greedy
	TopP        float64 // 0 or 1 = off
	TopK        int     // 0 = off
	N           int     // completions, >= 1
	// Seed makes sampling reproducible; nil draws a random seed.
	Seed        *int64
	Stop        []string
	MaxTokens   int // 0 = until the context is full
	TopLogprobs int // alternatives per token, 0..20
}

// Usage counts tokens like OpenAI: the prompt once, the completion tokens of every choice.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	// CachedPromptTokens are the prompt tokens whose prefill was shared with another request with the same
	// prompt (OpenAI's prompt_tokens_details.cached_tokens): the rollouts of a group prefill it once.
	CachedPromptTokens int
}

// Result is a finished generation.
type Result struct {
	Choices []trainyard.Choice
	Usage   Usage
}

// ToolCallDelta is one complete tool call in a stream. Index numbers the calls of the choice.
type ToolCallDelta struct {
	Index int
	trainyard.ToolCall
}

// Delta is one streamed increment of a choice: new reasoning, new content or a tool call, the logprobs of
// exactly the tokens it covers, and, on the last delta of the choice, the finish reason. Reasoning deltas
// all come before the first content delta.
type Delta struct {
	Index        int
	Reasoning    string
	Content      string
	ToolCalls    []ToolCallDelta
	Logprobs     []trainyard.TokenLogprob
	FinishReason string
}
