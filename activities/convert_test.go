package activities

import (
	"encoding/json"
	"testing"

	"github.com/trainyard/trainyard"
)

// TestTrajectoryReasoningReachesTheTemplate: a Choice as chat completions return it for a reasoning
// model (reasoning_content beside the content) and a message sending reasoning back under the newer
// name both give the engine the reasoning, so the chat template renders the turn as it was generated.
func TestTrajectoryReasoningReachesTheTemplate(t *testing.T) {
	var items []trainyard.MessageOrChoice
	js := `[{"role":"user","content":"hi"},
		{"role":"assistant","content":"Hello.","reasoning":"Greet back."},
		{"role":"user","content":"again"},
		{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hi!","reasoning_content":"Once more.","reasoning":"Once more."},"logprobs":null}]`
	if err := json.Unmarshal([]byte(js), &items); err != nil {
		t.Fatal(err)
	}
	msgs, choices, err := trajectoryMessages(items, nil)
	if err != nil || choices != 1 {
		t.Fatalf("%d choices: %v", choices, err)
	}
	if msgs[1].Reasoning != "Greet back." || msgs[3].Reasoning != "Once more." || !msgs[3].Trainable || msgs[3].Content != "Hi!" {
		t.Fatalf("messages %+v", msgs)
	}
}

// TestChoiceTokensAndLogprobsAreTheClients: training reads a Choice as the
// API checks it: a token_id: token that names no id, or a logprob that is
// not a log probability, is an error in the input, not text to re-tokenise
// or a trajectory to drop.
func TestChoiceTokensAndLogprobsAreTheClients(t *testing.T) {
	t.Parallel()
	choice := func(token string, logprob float64) *trainyard.Choice {
		return &trainyard.Choice{Message: trainyard.Message{Role: "assistant", Content: trainyard.TextContent("5")},
			Logprobs: &trainyard.ChoiceLogprobs{Content: []trainyard.TokenLogprob{{Token: token, Logprob: logprob}}}}
	}
	m, err := choiceMessage(choice("token_id:53", -0.1), nil)
	if err != nil || len(m.Tokens) != 1 || m.Tokens[0] != 53 {
		t.Fatalf("a sampled token: %+v, %v", m, err)
	}
	if m, err := choiceMessage(choice("5", -0.1), nil); err != nil || m.Tokens != nil {
		t.Fatalf("a token's text: %+v, %v", m, err)
	}
	for _, c := range []struct {
		token   string
		logprob float64
	}{{"token_id:-1", -0.1}, {"token_id:0x10", -0.1}, {"token_id:12345678901234567890123", -0.1}, {"token_id:53", 1e39}, {"token_id:53", 0.25}} {
		if _, err := choiceMessage(choice(c.token, c.logprob), nil); err == nil {
			t.Errorf("%s %v: no error", c.token, c.logprob)
		}
	}
}
