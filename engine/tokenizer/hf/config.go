package hf

import (
	"encoding/json"
	"errors"
	"fmt"
)

// config is what tokenizer_config.json adds: the special tokens' roles and the chat templates.
type config struct {
	bos, eos, pad, unk int // -1 when the file names none
	templates          map[string]string
}

// readConfig reads tokenizer_config.json (nil: none). A role naming a token the tokenizer does not have is
// an error, since generation would never stop on it.
func (t *Tokenizer) readConfig(data []byte, file string) error {
	t.cfg = config{bos: -1, eos: -1, pad: -1, unk: -1}
	if data == nil {
		return nil
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(data, &c); err != nil {
		return &LoadError{File: file, Err: err}
	}
	for _, role := range []struct {
		field string
		id    *int
	}{{"bos_token", &t.cfg.bos}, {"eos_token", &t.cfg.eos}, {"pad_token", &t.cfg.pad}, {"unk_token", &t.cfg.unk}} {
		content, err := tokenContent(c[role.field])
		if err == nil && content != "" {
			var ok bool
			if *role.id, ok = t.TokenID(content); !ok {
				err = fmt.Errorf("%q is not a token of tokenizer.json", content)
			}
		}
		if err != nil {
			return &LoadError{File: file, Field: role.field, Err: err}
		}
	}
	if raw, ok := c["chat_template"]; ok && string(raw) != "null" {
		t.cfg.templates = map[string]string{}
		var one string
		var named []struct{ Name, Template string }
		switch {
		case json.Unmarshal(raw, &one) == nil:
			t.cfg.templates["default"] = one
		case json.Unmarshal(raw, &named) == nil:
			for _, n := range named {
				t.cfg.templates[n.Name] = n.Template
			}
		default:
			return &LoadError{File: file, Field: "chat_template", Err: errors.New("neither a string nor a list of {name, template}")}
		}
	}
	return nil
}

// tokenContent reads a special token given as a string, as an AddedToken object ({"content": ...}), or null.
func tokenContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var o struct{ Content string }
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", errors.New("neither a string nor an object with content")
	}
	return o.Content, nil
}

// BOS returns the beginning-of-text token named by tokenizer_config.json.
func (t *Tokenizer) BOS() (int, bool) { return t.cfg.bos, t.cfg.bos >= 0 }

// EOS returns the end token named by tokenizer_config.json (for instruct models, usually the end of a turn:
// "<|im_end|>" for Qwen, "<|eot_id|>" for Llama 3.1+). The model's generation_config.json may list more.
func (t *Tokenizer) EOS() (int, bool) { return t.cfg.eos, t.cfg.eos >= 0 }

// PAD returns the padding token named by tokenizer_config.json.
func (t *Tokenizer) PAD() (int, bool) { return t.cfg.pad, t.cfg.pad >= 0 }

// ChatTemplate returns the Jinja chat template of tokenizer_config.json: name "" (or "default") is the
// plain one; files with several (e.g. "tool_use") list them by name.
func (t *Tokenizer) ChatTemplate(name string) (string, bool) {
	if name == "" {
		name = "default"
	}
	s, ok := t.cfg.templates[name]
	return s, ok
}
