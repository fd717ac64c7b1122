package chat

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// RenderTools renders function definitions as the compact block appended to the system turn:
//
//	# Tools
//	- get_weather(city: string, unit?: "c"|"f"): Get the current weather.
//	To call a tool, reply with <tool_call>{"name":...,"arguments":{...}}</tool_call>.
//
// One line per function keeps prompts short for a byte-level model; parameters come from the JSON Schema's
// properties (required first, in the schema's "required" order, then the optional ones marked "?").
func RenderTools(tools []Tool) (string, error) {
	if len(tools) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("# Tools\n")
	for _, t := range tools {
		if t.Name == "" {
			return "", fmt.Errorf("%w: tool without a name", ErrInvalidMessage)
		}
		params, err := renderParams(t.Parameters)
		if err != nil {
			return "", fmt.Errorf("%w: tool %q: %v", ErrInvalidMessage, t.Name, err)
		}
		fmt.Fprintf(&b, "- %s(%s)", t.Name, params)
		if d := strings.TrimSpace(t.Description); d != "" {
			b.WriteString(": " + strings.ReplaceAll(d, "\n", " "))
		}
		b.WriteString("\n")
	}
	b.WriteString(`To call a tool, reply with <tool_call>{"name":...,"arguments":{...}}</tool_call>.`)
	return b.String(), nil
}

type schema struct {
	Type       any                `json:"type"`
	Enum       []any              `json:"enum"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
}

func renderParams(raw json.RawMessage) (string, error) {
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("parameters: %w", err)
	}
	names := make([]string, 0, len(s.Properties))
	required := map[string]bool{}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; ok && !required[r] {
			required[r] = true
			names = append(names, r)
		}
	}
	var optional []string
	for n := range s.Properties {
		if !required[n] {
			optional = append(optional, n)
		}
	}
	sort.Strings(optional)
	names = append(names, optional...)
	parts := make([]string, len(names))
	for i, n := range names {
		mark := ""
		if !required[n] {
			mark = "?"
		}
		parts[i] = n + mark + ": " + typeName(s.Properties[n])
	}
	return strings.Join(parts, ", "), nil
}

func typeName(s *schema) string {
	if s == nil {
		return "any"
	}
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			js, _ := json.Marshal(v)
			vals[i] = string(js)
		}
		return strings.Join(vals, "|")
	}
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		names := make([]string, 0, len(t))
		for _, x := range t {
			names = append(names, fmt.Sprint(x))
		}
		return strings.Join(names, "|")
	}
	return "any"
}

// ParseToolCalls extracts the <tool_call>{"name":...,"arguments":{...}}</tool_call> blocks a model wrote and
// returns the remaining text (trimmed) and the calls, with ids "call_0", "call_1", ... in order (callers that
// need globally unique ids replace them). A block whose JSON does not parse, or an unterminated block, stays
// in the content as text, so nothing the model wrote is lost.
func ParseToolCalls(text string) (string, []ToolCall) {
	const open, closing = "<tool_call>", "</tool_call>"
	var content strings.Builder
	var calls []ToolCall
	rest := text
	for {
		i := strings.Index(rest, open)
		if i < 0 {
			content.WriteString(rest)
			break
		}
		j := strings.Index(rest[i+len(open):], closing)
		if j < 0 {
			content.WriteString(rest)
			break
		}
		body := rest[i+len(open) : i+len(open)+j]
		call, ok := parseCall(body)
		if ok {
			content.WriteString(rest[:i])
			call.ID = fmt.Sprintf("call_%d", len(calls))
			calls = append(calls, call)
		} else {
			content.WriteString(rest[:i+len(open)+j+len(closing)])
		}
		rest = rest[i+len(open)+j+len(closing):]
	}
	return strings.TrimSpace(content.String()), calls
}

func parseCall(body string) (ToolCall, bool) {
	var v struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		// Parameters is Llama 3's name for the arguments.
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &v); err != nil || v.Name == "" {
		return ToolCall{}, false
	}
	if len(v.Arguments) == 0 {
		v.Arguments = v.Parameters
	}
	args := strings.TrimSpace(string(v.Arguments))
	if args == "" || args == "null" {
		args = "{}"
	}
	if args[0] == '"' { // arguments given as a JSON string holding the object
		var s string
		if json.Unmarshal([]byte(args), &s) == nil {
			args = s
		}
	}
	return ToolCall{Name: v.Name, Arguments: args}, true
}

// ParseJSONToolCall reads the tool-call format of Llama 3's templates, where the whole answer is one JSON
// object {"name": ..., "parameters": {...}} ("arguments" is accepted too). Text that is not exactly such
// an object is returned unchanged as content, with no calls.
func ParseJSONToolCall(text string) (string, []ToolCall) {
	body := strings.TrimSpace(text)
	if !strings.HasPrefix(body, "{") || !strings.HasSuffix(body, "}") {
		return text, nil
	}
	call, ok := parseCall(body)
	if !ok {
		return text, nil
	}
	call.ID = "call_0"
	return "", []ToolCall{call}
}
