package hf

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzRoundTrip checks on arbitrary input that encoding never panics and that Decode inverts Encode and
// EncodeSpecial: on every string for Llama 3 (no normalizer; invalid UTF-8 included, bytes are bytes), for
// Qwen3, whose NFC normalizer is part of the tokenization, on every valid UTF-8 string already in NFC, and
// for Llama 2 (Encode only: see below) on every string without "▁", invalid UTF-8 included (bytes outside
// UTF-8 are their byte-fallback tokens).
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "Hello world", "<|im_start|>user\nhi<|im_end|>\n", "e\u0301", "你好 👍🏽",
		"\xff\xfe\x00", "  \t\r\n\n", "don'T 'ſ 123456789", "<|im_end", "\u212b", "<think></think>",
		"<|begin_of_text|><|eot_id|>", "a\u00a0b\u3000c", "\xe4\xbd", "x\u0301<|im_end|>\u0301",
		"<bos><start_of_turn>user\n hi<end_of_turn>", "<s> x </s>", "a> </b", "▁x", " 🫠\xff"} {
		f.Add(s)
	}
	qwen := loadDir(f, qwen3Dir)
	optional := func(dir string) *Tokenizer {
		if _, err := fileExists(dir); err != nil {
			return nil
		}
		return loadDir(f, dir)
	}
	// Gemma 3 runs the same code as Llama 2 but takes seconds to load in every fuzzing process, which
	// make test's short fuzzing runs would spend on loading; its parity fixtures cover it.
	llama, llama2 := optional(llama3Dir), optional(llama2Dir)
	f.Fuzz(func(t *testing.T, s string) {
		// SentencePiece-style tokenizers write spaces as "▁", so a "▁" typed in the text comes back as a
		// space; Llama 2 also puts one in front of every stretch between added tokens, which decoding
		// strips only at the very start.
		noMeta := !strings.Contains(s, "▁")
		for _, tc := range []struct {
			name               string
			tk                 *Tokenizer
			plainOK, specialOK bool
		}{
			{"qwen3", qwen, utf8.ValidString(s) && norm.NFC.IsNormalString(s), utf8.ValidString(s) && norm.NFC.IsNormalString(s)},
			{"llama3", llama, true, true},
			{"llama2", llama2, noMeta, false},
		} {
			if tc.tk == nil {
				continue
			}
			plain, special := tc.tk.Encode(s), tc.tk.EncodeSpecial(s)
			for _, id := range append(plain, special...) {
				if id < 0 || id >= tc.tk.VocabSize() {
					t.Fatalf("%s: id %d out of range", tc.name, id)
				}
			}
			if got := tc.tk.Decode(plain); tc.plainOK && got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q", tc.name, s, got)
			}
			if got := tc.tk.Decode(special); tc.specialOK && got != s {
				t.Errorf("%s: Decode(EncodeSpecial(%q)) = %q", tc.name, s, got)
			}
		}
	})
}
