package hftemplate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/chat"
)

// TestTrainingTemplateShapes locates trainable turns in templates that frame turns in the ways real ones
// do, none of which the turn marking may depend on: trimming content and always appending the generation
// prompt (Meta-Llama-3-8B-Instruct's original template), a default system prompt with the date, a turn
// closed by a newline or by nothing, and a marker after tool calls that plain answers do not end with;
// {% generation %} blocks, where a template has them, decide what is trained.
func TestTrainingTemplateShapes(t *testing.T) {
	call := chat.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city": "Oslo"}`}
	cases := []struct {
		name   string
		source string // "" uses model
		model  string
		msgs   []chat.Message
		want   []Turn // Message, Generated and End; Rendered is Generated
	}{{
		name:  "trims content and always appends the generation prompt",
		model: "llama3",
		msgs: []chat.Message{{Role: "system", Content: "Be brief."}, user("List the inner planets."),
			assistant("  Mercury, Venus, Earth.\n", ""), user(" And Mars? "), assistant("Mars too.", "")},
		want: []Turn{{Message: 2, Generated: "Mercury, Venus, Earth.", End: "<|eot_id|>"},
			{Message: 4, Generated: "Mars too.", End: "<|eot_id|>"}},
	}, {
		name: "default system prompt with the date",
		source: `{% if messages[0].role != 'system' %}<|system|>Today is {{ strftime_now('%d %b %Y') }}.<|end|>
{% endif %}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>
{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`,
		msgs: []chat.Message{user("Hi"), assistant("Hello!", ""), user("Date?"), assistant("22 Nov.", "")},
		want: []Turn{{Message: 1, Generated: "Hello!", End: "<|end|>"}, {Message: 3, Generated: "22 Nov.", End: "<|end|>"}},
	}, {
		name: "a newline closes a turn",
		source: `{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}`,
		msgs: []chat.Message{user("Hi"), assistant("Hello!", ""), user("Bye"), assistant("Bye.", "")},
		want: []Turn{{Message: 1, Generated: "Hello!"}, {Message: 3, Generated: "Bye."}},
	}, {
		name:   "nothing closes a turn",
		source: `{% for m in messages %}{% if m.role == 'user' %}[Q]{{ m.content }}[A]{% else %}{{ m.content }}{% endif %}{% endfor %}`,
		msgs:   []chat.Message{user("1+1"), assistant("2", ""), user("2+2"), assistant("4", "")},
		want:   []Turn{{Message: 1, Generated: "2"}, {Message: 3, Generated: "4"}},
	}, {
		name: "a different marker after tool calls",
		source: `{% for m in messages %}<{{ m.role }}>{% if m.tool_calls %}{{ m.tool_calls[0].function.name }}({{ m.tool_calls[0].function.arguments | tojson }})<|eom_id|>{% else %}{{ m.content }}<|eot_id|>{% endif %}
{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}`,
		msgs: []chat.Message{user("Weather in Oslo?"), assistant("", "", call), {Role: "tool", Content: "3 C", ToolCallID: "c1"}, assistant("3 degrees.", "")},
		want: []Turn{{Message: 1, Generated: `get_weather({"city": "Oslo"})`, End: "<|eom_id|>"}, {Message: 3, Generated: "3 degrees.", End: "<|eot_id|>"}},
	}, {
		name: "{% generation %} blocks decide: the newline after the marker is trained",
		source: `{% for m in messages %}{% if m.role == 'assistant' %}{{ '<|im_start|>assistant\n' }}{% generation %}{{ m.content + '<|im_end|>\n' }}{% endgeneration %}` +
			`{% else %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
		msgs: []chat.Message{user("Hi"), assistant("Hello!", ""), user("Bye"), assistant("Bye.", "")},
		want: []Turn{{Message: 1, Generated: "Hello!", End: "<|im_end|>\n"}, {Message: 3, Generated: "Bye.", End: "<|im_end|>\n"}},
	}, {
		name: "{% generation %} blocks decide: the marker is not trained",
		source: `{% for m in messages %}{% if m.role == 'assistant' %}{{ '<|im_start|>assistant\n' }}{% generation %}{{ m.content }}{% endgeneration %}{{ '<|im_end|>\n' }}` +
			`{% else %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
		msgs: []chat.Message{user("Hi"), {Role: "assistant", Content: "Hello!"}, user("Bye"), assistant("Bye.", "")},
		want: []Turn{{Message: 3, Generated: "Bye."}},
	}, {
		name:  "content holding the marker's text",
		model: "llama3-guarded",
		msgs:  []chat.Message{user("Print the marker."), assistant("It is <|eot_id|>.", "")},
		want:  []Turn{{Message: 1, Generated: "It is <|eot_id|>.", End: "<|eot_id|>"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tpl *Template
			if c.model != "" {
				tpl = loadModel(t, c.model)
			} else {
				var err error
				if tpl, err = New(c.source, Options{Now: func() time.Time { return fixedNow }}); err != nil {
					t.Fatal(err)
				}
			}
			req := Request{Messages: c.msgs}
			tr, err := tpl.RenderTraining(req)
			if err != nil {
				t.Fatal(err)
			}
			full, err := tpl.Render(req)
			if err != nil {
				t.Fatal(err)
			}
			var all, trained strings.Builder
			for _, s := range tr.Segments {
				all.WriteString(s.Text)
				if s.Trainable {
					trained.WriteString(s.Text)
				}
			}
			var want strings.Builder
			for k, w := range c.want {
				w.Rendered, w.AsGenerated = w.Generated, true
				if k >= len(tr.Turns) || tr.Turns[k] != w {
					t.Fatalf("turns\n got %+v\nwant %+v", tr.Turns, c.want)
				}
				want.WriteString(w.Generated + w.End)
			}
			if all.String() != full || trained.String() != want.String() || len(tr.Turns) != len(c.want) {
				t.Fatalf("segments %+v do not rebuild %q with %q trainable", tr.Segments, full, want.String())
			}
			// The prompt of each turn, as it was sampled, is followed by exactly the trainable text.
			for _, turn := range tr.Turns {
				prompt, err := tpl.Render(Request{Messages: c.msgs[:turn.Message], AddGenerationPrompt: true})
				if err != nil {
					t.Fatal(err)
				}
				through, err := tpl.Render(Request{Messages: c.msgs[:turn.Message+1]})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(through, prompt+turn.Generated+turn.End) {
					t.Errorf("message %d: %q does not continue %q with %q", turn.Message, through, prompt, turn.Generated+turn.End)
				}
			}
		})
	}
}

// TestTrainingUnsplittable: a template whose assistant turns cannot be located is refused with the
// feature that prevents it named.
func TestTrainingUnsplittable(t *testing.T) {
	cases := []struct{ name, source, want string }{
		{"the generation prompt is not how a turn begins",
			`{% for m in messages %}<{{ m.role }}>{{ m.content }}</s>{% endfor %}{% if add_generation_prompt %}<bot>{% endif %}`,
			"differently from its generation prompt"},
		{"assistant content is not rendered",
			`{% for m in messages %}{% if m.role == 'user' %}<user>{{ m.content }}</s>{% else %}<assistant></s>{% endif %}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}`,
			"does not write the content of an assistant message"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tpl, err := New(c.source, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tpl.RenderTraining(Request{Messages: []chat.Message{user("Hi"), assistant("Hello", "")}})
			if !errors.Is(err, ErrMask) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrMask saying %q", err, c.want)
			}
		})
	}
}

// TestTrainingVariants runs every corpus conversation through every template again with the assistant
// contents padded by the whitespace a sampled answer may carry (which trimming templates drop) and only
// some turns trainable: every turn located is the text the template writes after the turn's prompt, and
// the segments rebuild the rendering. Where a turn cannot be located the error is ErrMask, never a panic.
func TestTrainingVariants(t *testing.T) {
	corpus := loadCorpus(t)
	for _, model := range parityModels {
		tpl := loadModel(t, model)
		located, refused := 0, 0
		for n, c := range corpus {
			req := c.request(t)
			req.AddGenerationPrompt = false
			k := 0
			for i := range req.Messages {
				if m := &req.Messages[i]; m.Role == "assistant" {
					m.Content = []string{" ", "\n", "", "  \n"}[(n+k)%4] + m.Content + []string{"\n", "", " ", "\n\n"}[(n+k)%4]
					m.Trainable = (n+k)%2 == 0
					k++
				}
			}
			full, err := tpl.Render(req)
			if err != nil {
				continue
			}
			tr, err := tpl.RenderTraining(req)
			if err != nil {
				t.Logf("%s %s: %v", model, c.Name, err)
				if !errors.Is(err, ErrMask) {
					t.Errorf("%s %s: %v", model, c.Name, err)
				}
				refused++
				continue
			}
			var all strings.Builder
			for _, s := range tr.Segments {
				all.WriteString(s.Text)
			}
			if all.String() != full {
				t.Errorf("%s %s: the segments do not rebuild the rendering", model, c.Name)
			}
			for _, turn := range tr.Turns {
				located++
				msgs := req.Messages[:turn.Message]
				prompt, err1 := tpl.Render(Request{Messages: msgs, Tools: req.Tools, Kwargs: req.Kwargs, AddGenerationPrompt: true})
				through, err2 := tpl.Render(Request{Messages: req.Messages[:turn.Message+1], Tools: req.Tools, Kwargs: req.Kwargs})
				if err1 != nil || err2 != nil || !strings.HasPrefix(through, prompt+turn.Generated+turn.End) {
					t.Errorf("%s %s: message %d: %q is not what follows its prompt", model, c.Name, turn.Message, turn.Generated+turn.End)
				}
			}
		}
		t.Logf("%s: %d turns located, %d conversations refused", model, located, refused)
	}
}
