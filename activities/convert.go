package activities

import (
	"fmt"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/jobspec"
)

// engineMessage flattens an OpenAI message for the engine.
func engineMessage(m *trainyard.Message) (engine.Message, error) {
	if !jobspec.KnownRole(m.Role) {
		return engine.Message{}, fmt.Errorf("role %q is not one of system, developer, user, assistant, tool, function", m.Role)
	}
	out := engine.Message{Role: m.Role, Content: m.Content.Text(), Name: m.Name, ToolCallID: m.ToolCallID,
		Reasoning: m.ReasoningText()}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, engine.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out, nil
}

// engineTools converts OpenAI function tools.
func engineTools(tools []trainyard.Tool) []engine.Tool {
	var out []engine.Tool
	for _, t := range tools {
		out = append(out, engine.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return out
}

// choiceMessage turns a sampled Choice into a trainable assistant turn. When
// its logprobs name every token as "token_id:<id>" (as trainyard's chat
// completions write them), the exact sampled tokens and their sampling
// logprobs are used; otherwise the text is re-tokenised and the old
// logprobs are unknown. Trailing stop tokens are dropped, because the
// template closes the turn itself. A token_id: token that names no id, or
// a logprob that is no log probability, is the client's error, as at the
// API: taking it as text would train on other tokens than were sampled.
func choiceMessage(c *trainyard.Choice, stop map[int]bool) (engine.Message, error) {
	msg := c.Message
	if msg.Role == "" {
		msg.Role = "assistant"
	}
	if msg.Role != "assistant" {
		return engine.Message{}, fmt.Errorf("a choice's message must have role \"assistant\", not %q", msg.Role)
	}
	out, err := engineMessage(&msg)
	if err != nil {
		return out, err
	}
	out.Trainable = true
	if c.Logprobs == nil || len(c.Logprobs.Content) == 0 {
		return out, nil
	}
	for i, lp := range c.Logprobs.Content {
		if err := jobspec.CheckTokenID(lp.Token); err != nil {
			return out, fmt.Errorf("logprobs.content[%d].token %q: %w", i, lp.Token, err)
		}
		if err := jobspec.CheckLogprob(lp.Logprob); err != nil {
			return out, fmt.Errorf("logprobs.content[%d].logprob %v: %w", i, lp.Logprob, err)
		}
	}
	tokens := make([]int, 0, len(c.Logprobs.Content))
	logprobs := make([]float32, 0, len(c.Logprobs.Content))
	for _, lp := range c.Logprobs.Content {
		id, ok := jobspec.TokenID(lp.Token)
		if !ok {
			return out, nil // logprobs of another tokenizer: re-tokenise
		}
		tokens = append(tokens, id)
		logprobs = append(logprobs, float32(lp.Logprob))
	}
	for len(tokens) > 0 && stop[tokens[len(tokens)-1]] {
		tokens, logprobs = tokens[:len(tokens)-1], logprobs[:len(logprobs)-1]
	}
	out.Tokens, out.Logprobs = tokens, logprobs
	return out, nil
}

// trajectoryMessages converts messages_and_choices; only Choices are
// trainable.
func trajectoryMessages(items []trainyard.MessageOrChoice, stop map[int]bool) ([]engine.Message, int, error) {
	out := make([]engine.Message, 0, len(items))
	choices := 0
	for i := range items {
		var m engine.Message
		var err error
		switch it := items[i]; {
		case it.Choice != nil:
			m, err = choiceMessage(it.Choice, stop)
			choices++
		case it.Message != nil:
			m, err = engineMessage(it.Message)
		default:
			err = fmt.Errorf("empty item")
		}
		if err != nil {
			return nil, 0, fmt.Errorf("messages_and_choices[%d]: %w", i, err)
		}
		out = append(out, m)
	}
	return out, choices, nil
}

// stopTokens are the ids that end a sampled turn.
func stopTokens(base *engine.Base) map[int]bool {
	stop := map[int]bool{}
	for _, id := range base.StopTokens() {
		stop[id] = true
	}
	return stop
}
