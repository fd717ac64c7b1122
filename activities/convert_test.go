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
