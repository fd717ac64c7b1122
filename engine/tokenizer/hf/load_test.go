package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyJSON is a small byte-level BPE tokenizer.json: the 256 byte tokens, "he", "ll", "hell", "hello",
// two added tokens; edit modifies the decoded document before it is encoded again.
func tinyJSON(t *testing.T, edit func(doc map[string]any)) []byte {
	t.Helper()
	vocab := map[string]any{}
	for b := 0; b < 256; b++ {
		vocab[byteSpell[b]] = b
	}
	for i, tok := range []string{"he", "ll", "hell", "hello"} {
		vocab[tok] = 256 + i
	}
	bl := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	doc := map[string]any{
		"version":        "1.0",
		"added_tokens":   []any{map[string]any{"id": 260, "content": "<|end|>", "special": true}, map[string]any{"id": 261, "content": "<x>"}},
		"normalizer":     map[string]any{"type": "NFC"},
		"pre_tokenizer":  map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Digits", "individual_digits": true}, bl}},
		"post_processor": nil,
		"decoder":        bl,
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": []any{"h e", "l l", "he ll", "hell o"}},
	}
	if edit != nil {
		edit(doc)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTinyTokenizer(t *testing.T) {
	tk, err := New(tinyJSON(t, nil), []byte(`{"eos_token": {"content": "<|end|>"}, "chat_template": [{"name": "default", "template": "x"}, {"name": "tool_use", "template": "y"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.EncodeSpecial("hello<|end|>12"); !slices.Equal(got, []int{259, 260, '1', '2'}) {
		t.Errorf("EncodeSpecial = %v", got)
	}
	if eos, _ := tk.EOS(); eos != 260 {
		t.Errorf("EOS = %d", eos)
	}
	if s, ok := tk.ChatTemplate("tool_use"); !ok || s != "y" {
		t.Errorf("ChatTemplate(tool_use) = %q %v", s, ok)
	}
	// The same merges as [a, b] pairs, and with a "#version" header line, give the same model.
	for _, merges := range []any{
		[]any{[]string{"h", "e"}, []string{"l", "l"}, []string{"he", "ll"}, []string{"hell", "o"}},
		[]any{"#version: 0.2", "h e", "l l", "he ll", "hell o"},
	} {
		tk2, err := New(tinyJSON(t, func(d map[string]any) { d["model"].(map[string]any)["merges"] = merges }), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := tk2.Encode("hello"); !slices.Equal(got, []int{259}) {
			t.Errorf("merges %v: Encode(hello) = %v", merges, got)
		}
	}
}

// TestAddedTokenInVocabulary: SmolLM2 and GPT-2 keep their special tokens inside the BPE vocabulary
// (SmolLM2: ids 0-16); they keep those ids and are still only recognised by EncodeSpecial.
func TestAddedTokenInVocabulary(t *testing.T) {
	doc := tinyJSON(t, func(d map[string]any) {
		d["model"].(map[string]any)["vocab"].(map[string]any)["<|end|>"] = 260
		d["model"].(map[string]any)["vocab"].(map[string]any)["<x>"] = 261
	})
	tk, err := New(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.EncodeSpecial("he<|end|>"); !slices.Equal(got, []int{256, 260}) {
		t.Errorf("EncodeSpecial = %v", got)
	}
	if got := tk.Encode("<|end|>"); len(got) != len("<|end|>") || tk.VocabSize() != 262 {
		t.Errorf("Encode = %v (plain bytes), VocabSize %d", got, tk.VocabSize())
	}
}

// TestLoadErrors: everything this package does not implement is refused with the file and the field.
func TestLoadErrors(t *testing.T) {
	set := func(path string, v any) func(map[string]any) {
		return func(d map[string]any) {
			keys := strings.Split(path, ".")
			m := d
			for _, k := range keys[:len(keys)-1] {
				m = m[k].(map[string]any)
			}
			m[keys[len(keys)-1]] = v
		}
	}
	bl := map[string]any{"type": "ByteLevel"}
	for _, tc := range []struct {
		name, field string
		edit        func(map[string]any)
		unsupported bool
	}{
		{"lowercase", "normalizer.type", set("normalizer", map[string]any{"type": "Lowercase"}), true},
		{"nested", "normalizer.normalizers[1].type", set("normalizer", map[string]any{"type": "Sequence",
			"normalizers": []any{map[string]any{"type": "NFC"}, map[string]any{"type": "Lowercase"}}}), true},
		{"replace pattern", "normalizer.pattern", set("normalizer", map[string]any{"type": "Replace", "content": "x"}), false},
		{"metaspace with byte-level decoder", "decoder.type", set("pre_tokenizer", map[string]any{"type": "Metaspace"}), true},
		{"no byte level", "decoder.type", set("pre_tokenizer", map[string]any{"type": "Digits"}), true},
		{"byte level after metaspace", "pre_tokenizer.pretokenizers[1].type", set("pre_tokenizer", map[string]any{"type": "Sequence",
			"pretokenizers": []any{map[string]any{"type": "Metaspace"}, bl}}), true},
		{"prepend scheme", "pre_tokenizer.prepend_scheme", set("pre_tokenizer", map[string]any{"type": "Metaspace", "prepend_scheme": "sometimes"}), true},
		{"byte level not last", "pre_tokenizer.pretokenizers[1].type", set("pre_tokenizer", map[string]any{"type": "Sequence",
			"pretokenizers": []any{bl, map[string]any{"type": "Digits"}}}), true},
		{"split behaviour", "pre_tokenizer.behavior", set("pre_tokenizer", map[string]any{"type": "Split",
			"pattern": map[string]any{"String": " "}, "behavior": "Sideways"}), true},
		{"bad regex", "pre_tokenizer.pattern.Regex", set("pre_tokenizer", map[string]any{"type": "Split",
			"pattern": map[string]any{"Regex": "(unclosed"}, "behavior": "Isolated"}), false},
		{"decoder", "decoder.type", set("decoder", map[string]any{"type": "Metaspace"}), true},
		{"no decoder", "decoder", set("decoder", nil), true},
		{"wordpiece", "model.type", set("model.type", "WordPiece"), true},
		{"dropout", "model.dropout", set("model.dropout", 0.1), true},
		{"byte fallback", "model.byte_fallback", set("model.byte_fallback", true), true},
		{"suffix", "model.end_of_word_suffix", set("model.end_of_word_suffix", "</w>"), true},
		{"missing byte", "model.vocab", func(d map[string]any) { delete(d["model"].(map[string]any)["vocab"].(map[string]any), "Ġ") }, true},
		{"merge token", "model.merges", set("model.merges", []any{"h z9"}), false},
		{"merge line", "model.merges", set("model.merges", []any{"h e l"}), false},
		{"added id", "added_tokens[1].id", set("added_tokens", []any{map[string]any{"id": 260, "content": "<a>"}, map[string]any{"id": 300, "content": "<b>"}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tinyJSON(t, tc.edit), nil)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a LoadError", err)
			}
			if le.File != "tokenizer.json" || !strings.HasPrefix(le.Field, tc.field) {
				t.Errorf("error %q: file %q field %q, want field %q", err, le.File, le.Field, tc.field)
			}
			if errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Errorf("error %q: unsupported = %v", err, !tc.unsupported)
			}
		})
	}
	_, err := New(tinyJSON(t, nil), []byte(`{"eos_token": "<|nope|>"}`))
	if le := (*LoadError)(nil); !errors.As(err, &le) || le.File != "tokenizer_config.json" || le.Field != "eos_token" {
		t.Errorf("unknown eos token: %v", err)
	}
}

// TestLoadDir loads a model directory from disk, as the engine will.
func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	f := files(t, qwen3Dir)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), f.tok, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tk.EOS(); ok {
		t.Error("no tokenizer_config.json: no EOS")
	}
	if got := tk.Decode(tk.EncodeSpecial("Hi <|im_end|>")); got != "Hi <|im_end|>" {
		t.Errorf("round trip: %q", got)
	}
	_, err = Load(t.TempDir())
	var le *LoadError
	if !errors.As(err, &le) || !strings.HasSuffix(le.File, "tokenizer.json") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestMergeErrorNamesTheMerge: a merge whose token is not in the vocabulary is reported by its index,
// also when it is resolved in a later batch than the one being read.
func TestMergeErrorNamesTheMerge(t *testing.T) {
	merges := make([]any, 0, mergeBatch+10)
	for len(merges) < mergeBatch+5 {
		merges = append(merges, "h e")
	}
	merges = append(merges, "h z9", "l l")
	_, err := New(tinyJSON(t, func(d map[string]any) { d["model"].(map[string]any)["merges"] = merges }), nil)
	want := fmt.Sprintf("model.merges: merge %d: \"h\" \"z9\": a token is not in the vocabulary", mergeBatch+5)
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got %v, want it to end in %q", err, want)
	}
}
