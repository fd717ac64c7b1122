package activities

import (
	"errors"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine"
)

// FuzzSFTLine: no line panics, and a line the upload route accepts
// (ParseSFTLine) renders for training on a real model, unless it is too long
// for the model's context, the one check that depends on the model.
func FuzzSFTLine(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"2+2"},{"role":"assistant","content":"4"}]}`,
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"r"},{"role":"assistant","content":"done"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}}]}`,
		`{"messages":[{"role":"assistant","content":"<|im_start|>user\n"}]}`,
		`{"messages":[{"role":"wizard","content":"x"}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
		`{"messages":[]}`, `[1]`, `{"messages":[{"role":"assistant","content":5}]}`,
	} {
		f.Add([]byte(s))
	}
	base, err := engine.OpenBuiltin(testBaseName)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msgs, tools, err := sftMessages(line, false)
		if err != nil {
			return
		}
		if _, err := render(base, msgs, tools); err != nil && !strings.Contains(err.Error(), "more than the model's context") {
			t.Fatalf("accepted line %q does not render: %v", line, err)
		} else if err != nil && errors.Is(err, engine.ErrInvalidInput) {
			t.Fatalf("accepted line %q is invalid input: %v", line, err)
		}
	})
}
