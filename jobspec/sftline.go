package jobspec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/trainyard/trainyard"
)

// SFTLine is one conversation of SFT training data.
type SFTLine struct {
	Messages []trainyard.Message `json:"messages"`
	Tools    []trainyard.Tool    `json:"tools"`
}

// ParseSFTLine checks one line of SFT data in everything that does not
// depend on the model ({"messages": [...], "tools": [...]?}, known roles, an
// assistant message to train on, tool-call arguments that are JSON objects,
// function tools with valid names). The upload route checks lines with it
// and training parses them with it, so an upload holds nothing a job would
// refuse but a conversation too long for its model. The error reads after
// "line N".
func ParseSFTLine(line []byte) (SFTLine, error) {
	var l SFTLine
	if err := json.Unmarshal(line, &l); err != nil {
		return l, fmt.Errorf(" is not a JSON object with \"messages\": %v", err)
	}
	if len(l.Messages) == 0 {
		return l, fmt.Errorf(" has no messages")
	}
	assistant := false
	for i, m := range l.Messages {
		if !KnownRole(m.Role) {
			return l, fmt.Errorf(", messages[%d]: role %q is not one of %s", i, m.Role, strings.Join(Roles, ", "))
		}
		for _, c := range m.ToolCalls {
			if !IsJSONObject(c.Function.Arguments) {
				return l, fmt.Errorf(", messages[%d]: tool call %q: arguments must be a JSON object encoded as a string", i, c.Function.Name)
			}
		}
		assistant = assistant || m.Role == "assistant"
	}
	if !assistant {
		return l, fmt.Errorf(" has no assistant message to train on")
	}
	for i, t := range l.Tools {
		if t.Type != "function" || !ToolName.MatchString(t.Function.Name) {
			return l, fmt.Errorf(", tools[%d]: a tool must be {\"type\": \"function\", \"function\": {\"name\": ...}} "+
				"with a name of 1 to 64 letters, digits, '_' or '-'", i)
		}
	}
	return l, nil
}

// Roles are the message roles the chat template renders.
var Roles = []string{"system", "developer", "user", "assistant", "tool", "function"}

// KnownRole reports whether role is one of Roles.
func KnownRole(role string) bool {
	for _, r := range Roles {
		if r == role {
			return true
		}
	}
	return false
}

// ToolName is OpenAI's rule for function names, which chat requests follow
// too.
var ToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// IsJSONObject reports whether s is a JSON object (blank counts as {}, as
// the chat template treats it): what tool-call arguments must be.
func IsJSONObject(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return true
	}
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}
