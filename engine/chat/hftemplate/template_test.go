package hftemplate

import (
	"errors"
	"sync"
	"testing"

	"github.com/trainyard/trainyard/engine/chat"
)

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": null,
		"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T{{ bos_token }}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BOSToken != "<s>" || cfg.EOSToken != "" || len(cfg.Templates) != 2 {
		t.Fatalf("%+v", cfg)
	}
	for _, c := range []struct {
		tools bool
		want  string
	}{{false, "D"}, {true, "T<s>"}} {
		name, err := cfg.Name(c.tools)
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := cfg.Template(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tpl.Render(Request{}); err != nil || got != c.want {
			t.Errorf("tools=%v: %q %v", c.tools, got, err)
		}
	}
	noDefault, err := ParseConfig([]byte(`{"chat_template": [{"name": "rag", "template": "R"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noDefault.Name(false); !errors.Is(err, ErrTemplate) {
		t.Errorf("no default: %v", err)
	}
	for _, bad := range []string{`{}`, `{"chat_template": null}`, `{"chat_template": 3}`, `not json`, `{"chat_template": []}`} {
		if _, err := ParseConfig([]byte(bad)); !errors.Is(err, ErrTemplate) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestErrors(t *testing.T) {
	llama := loadModel(t, "llama3.2")
	call := func(id string) chat.ToolCall { return chat.ToolCall{ID: id, Name: "f", Arguments: `{}`} }
	tools := []chat.Tool{{Name: "f"}}
	_, err := llama.Render(Request{Messages: []chat.Message{user("Hi"), {Role: "assistant", ToolCalls: []chat.ToolCall{call("a"), call("b")}}}, Tools: tools})
	var raised *RaisedError
	if !errors.As(err, &raised) || raised.Message != "This model only supports single tool-calls at once!" || !errors.Is(err, ErrTemplate) {
		t.Errorf("raise_exception: %v", err)
	}
	for name, req := range map[string]Request{
		"arguments not an object": {Messages: []chat.Message{user("Hi"), {Role: "assistant", ToolCalls: []chat.ToolCall{{Name: "f", Arguments: `[1]`}}}}},
		"arguments not JSON":      {Messages: []chat.Message{user("Hi"), {Role: "assistant", ToolCalls: []chat.ToolCall{{Name: "f", Arguments: `{`}}}}},
		"no role":                 {Messages: []chat.Message{{Content: "Hi"}}},
		"tool without a name":     {Messages: []chat.Message{user("Hi")}, Tools: []chat.Tool{{}}},
		"bad parameters":          {Messages: []chat.Message{user("Hi")}, Tools: []chat.Tool{{Name: "f", Parameters: []byte(`{`)}}},
		"reserved variable":       {Messages: []chat.Message{user("Hi")}, Kwargs: map[string]any{"messages": 1}},
	} {
		if _, err := llama.Render(req); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, src := range map[string]string{
		"undefined method":   `{{ messages[0].content.nope() }}`,
		"undefined variable": `{{ nothing.attr }}`,
		"list mutation":      `{{ messages.append(1) }}`,
		"big range":          `{% for i in range(1000000) %}{% endfor %}`,
	} {
		tpl, err := New(src, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out, err := tpl.Render(Request{Messages: []chat.Message{user("Hi")}}); !errors.Is(err, ErrTemplate) {
			t.Errorf("%s: %q %v", name, out, err)
		}
	}
	for name, src := range map[string]string{
		"include":     `{% include "/etc/passwd" %}`,
		"import":      `{% import "/chat_template" as x %}`,
		"syntax":      `{% if %}`,
		"unclosed":    `{% for m in messages %}`,
		"unknown tag": `{% do x %}`,
	} {
		if _, err := New(src, Options{}); !errors.Is(err, ErrTemplate) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestConcurrentRender renders one template from many goroutines (run with -race).
func TestConcurrentRender(t *testing.T) {
	tpl := loadModel(t, "qwen3")
	corpus := loadCorpus(t)
	want := make([]string, len(corpus))
	for i, c := range corpus {
		want[i], _ = tpl.Render(c.request(t))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(corpus); i += 4 {
				if got, _ := tpl.Render(corpus[i].request(t)); got != want[i] {
					t.Errorf("%s: concurrent rendering differs", corpus[i].Name)
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRender renders a 10-turn conversation with two tools and tool calls, the shape of an agent
// request, with the parsed template reused as the API would.
func BenchmarkRender(b *testing.B) {
	for _, model := range []string{"qwen3", "llama3.2"} {
		b.Run(model, func(b *testing.B) {
			tpl := loadModel(b, model)
			req := benchConversation()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.Render(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderTraining is the same conversation with every assistant turn trainable.
func BenchmarkRenderTraining(b *testing.B) {
	for _, model := range []string{"qwen3", "llama3.2"} {
		b.Run(model, func(b *testing.B) {
			tpl := loadModel(b, model)
			req := benchConversation()
			req.AddGenerationPrompt = false
			for i := range req.Messages {
				req.Messages[i].Trainable = req.Messages[i].Role == "assistant"
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.RenderTraining(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchConversation() Request {
	tools := []chat.Tool{
		{Name: "get_weather", Description: "Get the current weather for a city.", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`)},
		{Name: "search", Description: "Search the web.", Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string"},"top_k":{"type":"integer"}},"required":["query"]}`)},
	}
	msgs := []chat.Message{{Role: "system", Content: "You are a helpful assistant that uses tools when needed."}}
	for k := range 5 {
		msgs = append(msgs, user("What is the weather in Paris today, and what should I wear for a walk?"))
		if k%2 == 0 {
			msgs = append(msgs,
				chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "celsius"}`}}},
				chat.Message{Role: "tool", ToolCallID: "c", Content: `{"temperature": 18, "condition": "sunny"}`})
		}
		msgs = append(msgs, chat.Message{Role: "assistant", Content: "It is 18 °C and sunny in Paris: a light jacket is enough for a walk."})
	}
	return Request{Messages: msgs, Tools: tools, AddGenerationPrompt: true}
}
