package hftemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Config is the chat part of a Hugging Face tokenizer_config.json: its templates and the special tokens
// they are rendered with.
type Config struct {
	// Templates maps a template name to its source: a plain chat_template string is "default"; a list of
	// {"name", "template"} entries keeps its names ("default", "tool_use", "rag", ...).
	Templates map[string]string
	BOSToken  string
	EOSToken  string
}

// ErrNoTemplate reports a tokenizer_config.json without a usable chat_template.
var ErrNoTemplate = fmt.Errorf("%w: no chat_template", ErrTemplate)

// LoadConfig reads tokenizer_config.json at path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hftemplate: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig reads the contents of a tokenizer_config.json. bos_token and eos_token may be strings or
// AddedToken objects ({"content": ...}); a missing or null one stays empty.
func ParseConfig(data []byte) (*Config, error) {
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: tokenizer_config.json: %v", ErrTemplate, err)
	}
	cfg := &Config{Templates: map[string]string{}}
	var err error
	if cfg.BOSToken, err = tokenText(raw.BOS); err != nil {
		return nil, fmt.Errorf("%w: bos_token: %v", ErrTemplate, err)
	}
	if cfg.EOSToken, err = tokenText(raw.EOS); err != nil {
		return nil, fmt.Errorf("%w: eos_token: %v", ErrTemplate, err)
	}
	var single string
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	switch {
	case len(raw.ChatTemplate) == 0 || string(raw.ChatTemplate) == "null":
		return nil, ErrNoTemplate
	case json.Unmarshal(raw.ChatTemplate, &single) == nil:
		cfg.Templates["default"] = single
	case json.Unmarshal(raw.ChatTemplate, &named) == nil:
		for _, t := range named {
			if t.Name == "" {
				return nil, fmt.Errorf("%w: a named chat_template has no name", ErrTemplate)
			}
			cfg.Templates[t.Name] = t.Template
		}
	default:
		return nil, fmt.Errorf("%w: chat_template is neither a string nor a list of named templates", ErrTemplate)
	}
	if len(cfg.Templates) == 0 {
		return nil, ErrNoTemplate
	}
	return cfg, nil
}

func tokenText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var added struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &added); err != nil {
		return "", fmt.Errorf("neither a string nor an AddedToken")
	}
	return added.Content, nil
}

// Name picks the template for a request the way transformers does: "tool_use" when tools are offered
// and the config has one, else "default".
func (c *Config) Name(withTools bool) (string, error) {
	if withTools {
		if _, ok := c.Templates["tool_use"]; ok {
			return "tool_use", nil
		}
	}
	if _, ok := c.Templates["default"]; ok {
		return "default", nil
	}
	names := make([]string, 0, len(c.Templates))
	for name := range c.Templates {
		names = append(names, name)
	}
	sort.Strings(names)
	return "", fmt.Errorf("%w: no default among the chat templates %v", ErrTemplate, names)
}

// Template parses the named template with the config's special tokens; now may be nil (time.Now).
func (c *Config) Template(name string, opts Options) (*Template, error) {
	src, ok := c.Templates[name]
	if !ok {
		return nil, fmt.Errorf("%w: no chat template named %q", ErrTemplate, name)
	}
	if opts.BOSToken == "" {
		opts.BOSToken = c.BOSToken
	}
	if opts.EOSToken == "" {
		opts.EOSToken = c.EOSToken
	}
	return New(src, opts)
}
