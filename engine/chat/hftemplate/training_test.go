package hftemplate

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/chat"
)

// turnFrame is what must surround every trainable turn of a family: a header before its output (one of
// headers) and what may follow its end marker (one of after).
type turnFrame struct {
	headers []string
	end     string
	after   []string
}

var (
	chatMLFrame = turnFrame{[]string{"<|im_start|>assistant\n"}, "<|im_end|>", []string{"\n"}}
	llama3Frame = turnFrame{[]string{"<|start_header_id|>assistant<|end_header_id|>\n\n"}, "<|eot_id|>", []string{"<|start_header_id|>"}}
	turnFrames  = map[string]turnFrame{
		"qwen3": chatMLFrame, "qwen2.5": chatMLFrame, "smollm2": chatMLFrame,
		"llama3.1": llama3Frame, "llama3.2": llama3Frame, "llama3": llama3Frame, "llama3-guarded": llama3Frame,
		"gemma3": {[]string{"<start_of_turn>model\n"}, "<end_of_turn>", []string{"\n"}},
		// DeepSeek V3 writes the answer after tool outputs without an assistant header, and every tool
		// output but the conversation's first on a new line.
		"deepseek-v3": {[]string{"<｜Assistant｜>", "<｜tool▁outputs▁end｜>"}, "<｜end▁of▁sentence｜>",
			[]string{"<｜User｜>", "<｜Assistant｜>", "<｜tool▁outputs▁begin｜>", "\n<｜tool▁output▁begin｜>"}},
	}
)

// TestTrainingCorpus marks every assistant turn of every corpus conversation trainable and checks the
// segments: they rebuild the plain rendering, each turn sits right after its header and ends with the
// family's marker, and every template but Qwen3 renders every turn exactly as generated.
func TestTrainingCorpus(t *testing.T) {
	corpus := loadCorpus(t)
	for _, model := range parityModels {
		t.Run(model, func(t *testing.T) {
			tpl := loadModel(t, model)
			frame, ok := turnFrames[model]
			if !ok {
				t.Fatalf("no turn frame for %s", model)
			}
			turns, rewritten, refused := 0, 0, 0
			for _, c := range corpus {
				req := c.request(t)
				req.AddGenerationPrompt = false
				want, err := tpl.Render(req)
				for i := range req.Messages {
					req.Messages[i].Trainable = req.Messages[i].Role == "assistant"
				}
				tr, terr := tpl.RenderTraining(req)
				if err != nil {
					if terr == nil {
						t.Errorf("%s: rendering fails (%v) but training rendering does not", c.Name, err)
					}
					refused++
					continue
				}
				if terr != nil && model == "qwen3" && thinkingOffWithReasoning(req) && errors.Is(terr, ErrMask) {
					refused++ // reasoning the model cannot have generated with thinking disabled
					continue
				}
				if terr != nil {
					t.Errorf("%s: %v", c.Name, terr)
					continue
				}
				checkSegments(t, c.Name, tr, want, frame)
				for _, turn := range tr.Turns {
					turns++
					if !turn.AsGenerated {
						rewritten++
						if model != "qwen3" {
							t.Errorf("%s: message %d rewritten by %s", c.Name, turn.Message, model)
						}
					}
				}
				if n := countAssistant(req.Messages); len(tr.Turns) != n {
					t.Errorf("%s: %d turns located, %d assistant messages", c.Name, len(tr.Turns), n)
				}
			}
			t.Logf("%s: %d trainable turns located (%d rewritten by the template), %d conversations refused", model, turns, rewritten, refused)
		})
	}
}

func thinkingOffWithReasoning(req Request) bool {
	if v, ok := req.Kwargs["enable_thinking"]; !ok || string(v.(json.RawMessage)) != "false" {
		return false
	}
	for _, m := range req.Messages {
		if m.Reasoning != "" || strings.Contains(m.Content, "</think>") {
			return true
		}
	}
	return false
}

func countAssistant(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// checkSegments checks a training rendering against the plain one and the family's turn frame.
func checkSegments(t *testing.T, name string, tr *Training, want string, frame turnFrame) {
	t.Helper()
	var all strings.Builder
	for _, s := range tr.Segments {
		all.WriteString(s.Text)
	}
	if all.String() != want || tr.Text != want {
		t.Fatalf("%s: segments do not rebuild the rendering\n got: %q\nwant: %q", name, all.String(), want)
	}
	offset, turn := 0, 0
	for k, s := range tr.Segments {
		if s.Trainable && k+1 < len(tr.Segments) && tr.Segments[k+1].Trainable {
			tu := tr.Turns[turn]
			turn++
			if s.Text != tu.Rendered || tr.Segments[k+1].Text != tu.End || tu.End != frame.end {
				t.Errorf("%s: turn %d segments %q+%q, turn %+v", name, tu.Message, s.Text, tr.Segments[k+1].Text, tu)
			}
			if !slices.ContainsFunc(frame.headers, func(h string) bool {
				return strings.HasSuffix(want[:offset], h) || strings.HasSuffix(want[:offset], h+"<think>\n\n</think>\n\n")
			}) {
				t.Errorf("%s: turn %d does not follow its header: %q", name, tu.Message, want[max(0, offset-60):offset])
			}
			rest := want[offset+len(s.Text)+len(frame.end):]
			if rest != "" && !slices.ContainsFunc(frame.after, func(a string) bool { return strings.HasPrefix(rest, a) }) {
				t.Errorf("%s: turn %d is followed by %q", name, tu.Message, rest[:min(len(rest), 40)])
			}
			if s.Message != tu.Message || tr.Segments[k+1].Message != tu.Message {
				t.Errorf("%s: segments of turn %d say message %d", name, tu.Message, s.Message)
			}
		}
		offset += len(s.Text)
	}
	if turn != len(tr.Turns) {
		t.Errorf("%s: %d turns, %d trainable segment pairs", name, len(tr.Turns), turn)
	}
}

func user(s string) chat.Message { return chat.Message{Role: "user", Content: s} }

func assistant(content, reasoning string, calls ...chat.ToolCall) chat.Message {
	return chat.Message{Role: "assistant", Content: content, Reasoning: reasoning, ToolCalls: calls, Trainable: true}
}

// TestTrainingQwen3Rewrites pins down what is trained when Qwen3 rewrites earlier turns.
func TestTrainingQwen3Rewrites(t *testing.T) {
	tpl := loadModel(t, "qwen3")
	call := chat.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city": "Paris"}`}
	callText := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	tools := []chat.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object"}`)}}
	cases := []struct {
		name   string
		msgs   []chat.Message
		kwargs map[string]any
		want   []Turn
	}{{
		name: "reasoning of an earlier turn is dropped",
		msgs: []chat.Message{user("Hi"), assistant("Hello!", "greet"), user("Weather?"), assistant("Sunny.", "look it up")},
		want: []Turn{
			{Message: 1, Generated: "<think>\ngreet\n</think>\n\nHello!", Rendered: "Hello!"},
			{Message: 3, Generated: "<think>\nlook it up\n</think>\n\nSunny.", Rendered: "<think>\nlook it up\n</think>\n\nSunny.", AsGenerated: true},
		},
	}, {
		name: "an empty think block of a turn that is not last is dropped",
		msgs: []chat.Message{user("Weather?"), assistant("", "", call), {Role: "tool", Content: "sunny", ToolCallID: "c1"}, assistant("Sunny.", "")},
		want: []Turn{
			{Message: 1, Generated: "<think>\n\n</think>\n\n" + callText, Rendered: callText},
			{Message: 3, Generated: "<think>\n\n</think>\n\nSunny.", Rendered: "<think>\n\n</think>\n\nSunny.", AsGenerated: true},
		},
	}, {
		name:   "thinking disabled: the empty think block is the prompt's",
		msgs:   []chat.Message{user("Weather?"), assistant("", "", call), {Role: "tool", Content: "sunny", ToolCallID: "c1"}, assistant("Sunny.", ""), user("Thanks"), assistant("You're welcome.", "")},
		kwargs: map[string]any{"enable_thinking": false},
		want: []Turn{
			{Message: 1, Generated: callText, Rendered: callText, AsGenerated: true},
			{Message: 3, Generated: "Sunny.", Rendered: "Sunny.", AsGenerated: true},
			{Message: 5, Generated: "You're welcome.", Rendered: "You're welcome.", AsGenerated: true},
		},
	}, {
		name: "only flagged turns are trained",
		msgs: []chat.Message{user("Hi"), {Role: "assistant", Content: "Hello!"}, user("Bye"), assistant("Bye!", "")},
		want: []Turn{{Message: 3, Generated: "<think>\n\n</think>\n\nBye!", Rendered: "<think>\n\n</think>\n\nBye!", AsGenerated: true}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := Request{Messages: c.msgs, Tools: tools, Kwargs: c.kwargs}
			tr, err := tpl.RenderTraining(req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tpl.Render(req)
			if err != nil {
				t.Fatal(err)
			}
			checkSegments(t, c.name, tr, want, chatMLFrame)
			if len(tr.Turns) != len(c.want) {
				t.Fatalf("turns %+v", tr.Turns)
			}
			for k, w := range c.want {
				w.End = "<|im_end|>"
				if tr.Turns[k] != w {
					t.Errorf("turn %d\n got %+v\nwant %+v", k, tr.Turns[k], w)
				}
			}
		})
	}
}

// TestTrainingRefusals checks that conversations whose turns cannot be located are errors.
func TestTrainingRefusals(t *testing.T) {
	qwen3 := loadModel(t, "qwen3")
	upper, err := New(`{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' and not loop.last %}{{ m.content | upper }}{% else %}{{ m.content }}{% endif %}</s>
{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tpl  *Template
		req  Request
		want error
	}{
		{"reasoning with thinking disabled", qwen3, Request{Messages: []chat.Message{user("Hi"), assistant("Hello", "hm")}, Kwargs: map[string]any{"enable_thinking": false}}, ErrMask},
		{"history rewritten another way", upper, Request{Messages: []chat.Message{user("Hi"), assistant("hello", ""), user("Bye"), assistant("bye", "")}}, ErrMask},
		{"trainable user message", qwen3, Request{Messages: []chat.Message{{Role: "user", Content: "Hi", Trainable: true}}}, ErrInvalidInput},
		{"leading assistant turn", qwen3, Request{Messages: []chat.Message{assistant("Hello", "")}}, ErrMask},
		{"marker inside a rewritten turn", qwen3, Request{Messages: []chat.Message{user("Hi"), assistant("b<|im_end|>b", "r"), user("Bye"), assistant("bye", "")}}, ErrMask},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := c.tpl.RenderTraining(c.req)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v (%+v), want %v", err, tr, c.want)
			}
		})
	}
}
