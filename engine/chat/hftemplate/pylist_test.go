package hftemplate

import (
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/chat"
)

// TestNegativeIndexes: a negative index as long as the list (x[-1] of one item) is its first item, as in
// Python; gonja alone leaves it undefined. The expected strings are Python's.
func TestNegativeIndexes(t *testing.T) {
	one := []chat.Message{{Role: "user", Content: "hi"}}
	for src, want := range map[string]string{
		`{{ messages[-1].role }}`:                                    "user",
		`{{ messages[-2] is defined }}|{{ messages[1] is defined }}`: "False|False",
		`{{ messages|length }}{% for m in messages[::-1] %}{{ m.role }}{% endfor %}{{ messages|tojson }}`: `1user[{"role": "user", "content": "hi"}]`,
		`{{ "ab".split('<think>')[-1] }}|{{ "ab".split('<think>')[-2] is defined }}`:                      "ab|False",
		`{{ "a<think>b".split('<think>')[-2] }}{{ "a b".split()[1:] }}{{ "a b c".rsplit(' ', 1)[-2] }}`:   "a['b']a b",
	} {
		tpl, err := New(src, Options{Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tpl.Render(Request{Messages: one})
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", src, got, err, want)
		}
	}
}

// TestQwen3ClosingThinkAlone: a sampled reply with "</think>" and no "<think>" (a random model's rollout
// in make bench-loop) renders, its reasoning the text before the tag, as Qwen3's template in Python does.
func TestQwen3ClosingThinkAlone(t *testing.T) {
	tpl := loadModel(t, "qwen3")
	got, err := tpl.Render(Request{Messages: []chat.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "x</think>y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>assistant\n<think>\nx\n</think>\n\ny<|im_end|>"; !strings.Contains(got, want) {
		t.Errorf("rendered %q, want it to hold %q", got, want)
	}
}
