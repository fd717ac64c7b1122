package hftemplate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/trainyard/trainyard/engine/chat"
)

// The template sees the dicts Hugging Face's apply_chat_template would be given for the same OpenAI
// request (testdata/gen_fixtures.py builds the same ones for the reference renderer):
//
//	{"role", "content", ["reasoning_content"], ["tool_calls": [{["id"], "type": "function",
//	 "function": {"name", "arguments": {...}}}]], ["tool_call_id"], ["name"]}
//
// Optional keys are present only when set, because templates test presence ('tool_calls' in message,
// message.reasoning_content is defined). "developer" becomes "system" (no HF template knows the role),
// content is always a string, and tool-call arguments are the parsed JSON object HF templates expect.
// JSON objects keep their key order (Python dicts do, and tojson prints them in that order).

// dict builds an ordered dict from key/value pairs.
func dict(kv ...any) *exec.Dict {
	d := &exec.Dict{Pairs: make([]*exec.Pair, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(kv[i]), Value: exec.AsValue(kv[i+1])})
	}
	return d
}

// dictBuilder collects the key/value pairs of a dict whose optional keys are added conditionally.
type dictBuilder struct{ kv []any }

func (d *dictBuilder) add(key string, value any) { d.kv = append(d.kv, key, value) }

func messageValues(msgs []chat.Message) ([]any, error) {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		v, err := messageValue(m)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrInvalidInput, i, err)
		}
		out[i] = v
	}
	return out, nil
}

func messageValue(m chat.Message) (*exec.Dict, error) {
	role := m.Role
	switch role {
	case "":
		return nil, fmt.Errorf("missing role")
	case "developer":
		role = "system"
	}
	var b dictBuilder
	b.add("role", role)
	b.add("content", m.Content)
	if m.Reasoning != "" {
		b.add("reasoning_content", m.Reasoning)
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for j, c := range m.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("tool call %d has no function name", j)
			}
			args, err := parseArguments(c.Arguments)
			if err != nil {
				return nil, fmt.Errorf("tool call %d (%s): %v", j, c.Name, err)
			}
			var cb dictBuilder
			if c.ID != "" {
				cb.add("id", c.ID)
			}
			cb.add("type", "function")
			cb.add("function", dict("name", c.Name, "arguments", args))
			calls[j] = dict(cb.kv...)
		}
		b.add("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		b.add("tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		b.add("name", m.Name)
	}
	return dict(b.kv...), nil
}

// parseArguments turns OpenAI's JSON-text arguments into the object HF templates expect; empty text is {}.
func parseArguments(text string) (*exec.Dict, error) {
	if strings.TrimSpace(text) == "" {
		return dict(), nil
	}
	v, err := decodeJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	d, ok := v.(*exec.Dict)
	if !ok {
		return nil, fmt.Errorf("arguments are not a JSON object")
	}
	return d, nil
}

func toolValues(tools []chat.Tool) ([]any, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]any, len(tools))
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("%w: tool %d has no name", ErrInvalidInput, i)
		}
		var fb dictBuilder
		fb.add("name", t.Name)
		if t.Description != "" {
			fb.add("description", t.Description)
		}
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && string(p) != "null" {
			params, err := decodeJSON(p)
			if err != nil {
				return nil, fmt.Errorf("%w: tool %q parameters: %v", ErrInvalidInput, t.Name, err)
			}
			fb.add("parameters", params)
		}
		out[i] = dict("type", "function", "function", dict(fb.kv...))
	}
	return out, nil
}

// kwargValue converts a caller's extra template variable (Go scalars, slices, maps, json.RawMessage)
// into a template value. Maps are sorted by key: a Go map has no order of its own.
func kwargValue(v any) (any, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return decodeJSON(x)
	case nil, bool, string, int, int64, float64, *exec.Dict:
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := kwargValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		raw, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return decodeJSON(raw)
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("unsupported template variable of type %T", v)
		}
		return decodeJSON(raw)
	}
}

// decodeJSON decodes one JSON value the way Python's json.loads does: objects keep their key order
// (*exec.Dict; a repeated key keeps its first position and last value), integers stay integers (*big.Int
// beyond int64), other numbers are float64.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := &exec.Dict{Pairs: []*exec.Pair{}}
			index := map[string]int{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key := kt.(string)
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if i, dup := index[key]; dup {
					d.Pairs[i].Value = exec.AsValue(val)
					continue
				}
				index[key] = len(d.Pairs)
				d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(key), Value: exec.AsValue(val)})
			}
			_, err := dec.Token()
			return d, err
		case '[':
			list := []any{}
			for dec.More() {
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, val)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return number(string(t))
	default: // string, bool, nil
		return t, nil
	}
}

func number(s string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return int(i), nil
		}
		b, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("bad integer %q", s)
		}
		return b, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) { // Python turns an overflowing literal into inf, as ParseFloat does
		return nil, err
	}
	return f, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
