package hftemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/chat"
)

// The parity corpus (testdata/corpus.json) and the reference renderings (testdata/expected/*.json) come
// from testdata/gen_fixtures.py, which renders every conversation with Debian's python3-jinja2 in the
// environment transformers uses; `make hftemplate-fixtures` regenerates them.

// fixedNow is gen_fixtures.py's FIXED_NOW.
var fixedNow = time.Date(2026, 11, 22, 9, 30, 5, 0, time.UTC)

// corpusCase is one conversation in OpenAI wire form.
type corpusCase struct {
	Name                string          `json:"name"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Kwargs              json.RawMessage `json:"kwargs"`
}

type wireMessage struct {
	Role             string  `json:"role"`
	Content          *string `json:"content"`
	ReasoningContent string  `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
}

type wireTool struct {
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type expected struct {
	Name   string  `json:"name"`
	Output *string `json:"output"`
	Error  string  `json:"error"`
}

func (c corpusCase) request(t testing.TB) Request {
	req := Request{AddGenerationPrompt: c.AddGenerationPrompt}
	for _, m := range c.Messages {
		cm := chat.Message{Role: m.Role, Reasoning: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
		if m.Content != nil {
			cm.Content = *m.Content
		}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, cm)
	}
	for _, tl := range c.Tools {
		req.Tools = append(req.Tools, chat.Tool{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: tl.Function.Parameters})
	}
	if len(c.Kwargs) > 0 {
		var kw map[string]json.RawMessage
		if err := json.Unmarshal(c.Kwargs, &kw); err != nil {
			t.Fatal(err)
		}
		req.Kwargs = map[string]any{}
		for k, v := range kw {
			req.Kwargs[k] = v
		}
	}
	return req
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadCorpus(t testing.TB) []corpusCase {
	var corpus []corpusCase
	readJSON(t, "testdata/corpus.json", &corpus)
	return corpus
}

// loadModel parses testdata/models/<model>/tokenizer_config.json's default template.
func loadModel(t testing.TB, model string) *Template {
	t.Helper()
	cfg, err := LoadConfig(filepath.Join("testdata", "models", model, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := cfg.Template("default", Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

var parityModels = []string{"qwen3", "qwen2.5", "llama3.1", "llama3.2", "smollm2", "llama3", "llama3-guarded", "gemma3", "deepseek-v3"}

// TestParity demands byte-identical output with python3-jinja2 for every conversation of the corpus and
// every committed template, and an error wherever the reference raised one.
func TestParity(t *testing.T) {
	corpus := loadCorpus(t)
	for _, model := range parityModels {
		t.Run(model, func(t *testing.T) {
			tpl := loadModel(t, model)
			var want []expected
			readJSON(t, filepath.Join("testdata", "expected", model+".json"), &want)
			if len(want) != len(corpus) {
				t.Fatalf("%d expected renderings for %d conversations: regenerate the fixtures", len(want), len(corpus))
			}
			same, errs := 0, 0
			for i, c := range corpus {
				got, err := tpl.Render(c.request(t))
				w := want[i]
				switch {
				case w.Output == nil && err == nil:
					t.Errorf("%s: the reference failed (%s) but we rendered %q", c.Name, w.Error, got)
				case w.Output == nil:
					errs++
				case err != nil:
					t.Errorf("%s: %v", c.Name, err)
				case got != *w.Output:
					t.Errorf("%s: output differs\n got: %q\nwant: %q", c.Name, got, *w.Output)
				default:
					same++
				}
			}
			t.Logf("%s: %d/%d identical, %d refused by both", model, same, len(corpus), errs)
		})
	}
}
