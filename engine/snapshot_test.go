package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trainyard/trainyard/engine/chat/hftemplate"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
)

var (
	qwenOnce sync.Once
	qwenDir  string
	qwenBase *Base
	qwenErr  error
)

// qwenSnapshot writes one tiny random-weight snapshot with Qwen3's real tokenizer for the tests of this
// file and opens it once (the tokenizer takes a moment to load).
func qwenSnapshot(t *testing.T) (string, *Base) {
	t.Helper()
	qwenOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qwen3-snapshot")
		if err != nil {
			qwenErr = err
			return
		}
		qwenDir = dir
		hfsnapshot.WriteQwen3Snapshot(t, dir, hfsnapshot.TinyQwen3, 7)
		qwenBase, qwenErr = OpenSnapshot("Qwen/Qwen3-tiny", dir)
	})
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenDir, qwenBase
}

func TestMain(m *testing.M) {
	code := m.Run()
	if qwenDir != "" {
		os.RemoveAll(qwenDir)
	}
	os.Exit(code)
}

func TestInspectSnapshot(t *testing.T) {
	dir, _ := qwenSnapshot(t)
	info, err := InspectSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := hfsnapshot.TinyQwen3
	if info.Params != c.NumParams() || info.DType != "BF16" || info.ContextLength != c.MaxSeqLen ||
		info.VocabSize != c.VocabSize || !info.HFTokenizer || info.WeightBytes < int64(2*c.NumParams()) {
		t.Fatalf("info = %+v, want %d params, BF16, context %d", info, c.NumParams(), c.MaxSeqLen)
	}
}

// TestOpenSnapshotQwen3Tokenizer: a snapshot opens with its own tokenizer and chat template: the prompt
// is the template's rendering encoded with the tokenizer, generation_config.json's eos ids stop
// generation, <tool_call> is the call marker, and a training sequence has loss exactly on the assistant
// output and its <|im_end|>.
func TestOpenSnapshotQwen3Tokenizer(t *testing.T) {
	dir, b := qwenSnapshot(t)
	tools := []Tool{{Name: "get_weather", Description: "Weather of a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Weather in Paris? 天气"}}
	ids, err := b.RenderPrompt(msgs, tools)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := hftemplate.LoadConfig(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := tc.Template("default", hftemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := tpl.Render(hftemplate.Request{Messages: msgs, Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Tokenizer().Decode(ids); got != want || !strings.HasSuffix(got, "<|im_start|>assistant\n") {
		t.Fatalf("prompt decodes to %q, want %q", got, want)
	}
	if len(ids) >= len(want)/2 {
		t.Fatalf("%d ids for %d bytes: not the BPE tokenizer", len(ids), len(want))
	}
	if !slices.Equal(b.StopTokens(), []int{151643, 151645}) {
		t.Fatalf("stop tokens %v", b.StopTokens())
	}
	if s, e, ok := b.ToolCallTokens(); !ok || s != 151657 || e != 151658 {
		t.Fatalf("tool-call tokens %d %d %v", s, e, ok)
	}
	content, calls := b.ParseToolCalls("ok <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
	if content != "ok" || len(calls) != 1 || calls[0].Arguments != `{"city": "Paris"}` {
		t.Fatalf("parsed %q %+v", content, calls)
	}

	answer := []ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}
	seq, err := b.RenderTraining(append(msgs, Message{Role: "assistant", Content: "Checking.", ToolCalls: answer, Trainable: true}), tools)
	if err != nil {
		t.Fatal(err)
	}
	var trained []int
	for i, id := range seq.Tokens {
		if seq.Trainable[i] {
			trained = append(trained, id)
		}
	}
	got := b.Tokenizer().Decode(trained)
	if !strings.Contains(got, "Checking.") || !strings.Contains(got, "<tool_call>") || !strings.HasSuffix(got, "</tool_call><|im_end|>") {
		t.Fatalf("trainable text %q", got)
	}
	if !slices.Equal(seq.Tokens[:len(ids)], ids) {
		t.Fatalf("the training sequence does not start with the generation prompt's ids")
	}

	// Sampled ids stand for the turn as they are, with their logprobs (Qwen3 writes the last turn with an
	// empty <think></think>; the model, prompted without one, produced what it produced).
	out, err := b.Sample(context.Background(), nil, ids, SampleParams{MaxTokens: 6, Seed: 1, Temperature: 1, TopLogprobs: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := out[0]
	lps := make([]float32, len(c.Tokens))
	toks := make([]int, len(c.Tokens))
	for i, tk := range c.Tokens {
		toks[i], lps[i] = tk.ID, tk.Logprob
	}
	seq, err = b.RenderTraining(append(msgs, Message{Role: "assistant", Content: b.Tokenizer().Decode(toks),
		Tokens: toks, Logprobs: lps, Trainable: true}), tools)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seq.Tokens[len(ids):len(ids)+len(toks)], toks) || seq.OldLogprobs[len(ids)] != lps[0] {
		t.Fatalf("sampled ids not used verbatim")
	}

	a, err := b.NewAdapter(DefaultLoRAConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewTrainer(b, a, nil).SFTStep(context.Background(), []Sequence{seq}, DefaultAdamWConfig())
	if err != nil || !(st["loss"] > 0) {
		t.Fatalf("SFT step on the snapshot: %v %v", st, err)
	}
}

// TestSnapshotThinkTokens: Qwen3's tokenizer has <think> and </think> as added tokens, so the model's
// reasoning can be told apart; chat_template_kwargs reach the template (enable_thinking false closes an
// empty think block in the generation prompt), and a reasoning_content sent back on an earlier assistant
// turn is rendered by the template.
func TestSnapshotThinkTokens(t *testing.T) {
	_, b := qwenSnapshot(t)
	start, end, ok := b.ThinkTokens()
	if !ok || b.Tokenizer().Decode([]int{start}) != "<think>" || b.Tokenizer().Decode([]int{end}) != "</think>" {
		t.Fatalf("think tokens %d %d %v", start, end, ok)
	}
	msgs := []Message{{Role: "user", Content: "Hi"}}
	plain, err := b.RenderPromptKwargs(msgs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, err := b.RenderPromptKwargs(msgs, nil, map[string]any{"enable_thinking": false})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Tokenizer().Decode(off); got != b.Tokenizer().Decode(plain)+"<think>\n\n</think>\n\n" {
		t.Fatalf("enable_thinking false renders %q", got)
	}
	if _, err := b.RenderPromptKwargs(msgs, nil, map[string]any{"messages": 1}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("a kwarg overriding messages: %v", err)
	}
	turns := append(msgs, Message{Role: "assistant", Content: "Hello!", Reasoning: "The user greets me."},
		Message{Role: "user", Content: "Again"})
	ids, err := b.RenderPrompt(turns, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Qwen3 keeps the reasoning of turns after the last user message only: here the assistant turn comes
	// before it, so its reasoning is dropped, and with the turn last it is kept.
	if got := b.Tokenizer().Decode(ids); strings.Contains(got, "greets") {
		t.Fatalf("reasoning of an earlier turn rendered: %q", got)
	}
	ids, err = b.RenderPrompt(turns[:2], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Tokenizer().Decode(ids); !strings.Contains(got, "<think>\nThe user greets me.\n</think>\n\nHello!") {
		t.Fatalf("reasoning of the last assistant turn not rendered: %q", got)
	}
}

// TestSnapshotErrorsNameFileAndField: what keeps a snapshot from loading is reported with its file and
// field.
func TestSnapshotErrorsNameFileAndField(t *testing.T) {
	src, _ := qwenSnapshot(t)
	copyDir := func(t *testing.T) string {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "tokenizer_config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} {
			if err := os.Link(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	edit := func(t *testing.T, dir, file string, f func(map[string]any)) {
		p := filepath.Join(dir, file)
		var m map[string]any
		js, _ := os.ReadFile(p)
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		js, _ = json.Marshal(m)
		os.Remove(p) // a hard link to the shared snapshot: replace, never write through
		if err := os.WriteFile(p, js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, file, field string
		change            func(t *testing.T, dir string)
		inspectOK         bool // only a full load finds it
	}{
		{"unknown architecture", "config.json", "model_type", func(t *testing.T, dir string) {
			edit(t, dir, "config.json", func(m map[string]any) { m["model_type"] = "mamba" })
		}, false},
		{"no chat template", "tokenizer_config.json", "chat_template", func(t *testing.T, dir string) {
			edit(t, dir, "tokenizer_config.json", func(m map[string]any) { delete(m, "chat_template") })
		}, false},
		{"no weights", "model.safetensors", "", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "model.safetensors"))
		}, false},
		{"bad eos id", "generation_config.json", "eos_token_id", func(t *testing.T, dir string) {
			edit(t, dir, "generation_config.json", func(m map[string]any) { m["eos_token_id"] = "x" })
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t)
			tc.change(t, dir)
			_, ierr := InspectSnapshot(dir)
			_, err := OpenSnapshot("x", dir)
			if tc.inspectOK != (ierr == nil) {
				t.Fatalf("InspectSnapshot: %v", ierr)
			}
			var se *SnapshotError
			if !errors.As(err, &se) || filepath.Base(se.File) != tc.file || se.Field != tc.field || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("OpenSnapshot: %v, want a SnapshotError on %s field %q", err, tc.file, tc.field)
			}
		})
	}
}
