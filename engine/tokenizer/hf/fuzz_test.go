package hf

import (
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzRoundTrip checks on arbitrary input that encoding never panics and that Decode inverts Encode and
// EncodeSpecial: on every string for Llama 3 (no normalizer; invalid UTF-8 included, bytes are bytes), and
// for Qwen3, whose NFC normalizer is part of the tokenization, on every valid UTF-8 string already in NFC.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "Hello world", "<|im_start|>user\nhi<|im_end|>\n", "e\u0301", "你好 👍🏽",
		"\xff\xfe\x00", "  \t\r\n\n", "don'T 'ſ 123456789", "<|im_end", "\u212b", "<think></think>",
		"<|begin_of_text|><|eot_id|>", "a\u00a0b\u3000c", "\xe4\xbd", "x\u0301<|im_end|>\u0301"} {
		f.Add(s)
	}
	qwen := loadDir(f, qwen3Dir)
	var llama *Tokenizer
	if _, err := fileExists(llama3Dir); err == nil {
		llama = loadDir(f, llama3Dir)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tc := range []struct {
			name string
			tk   *Tokenizer
			ok   bool
		}{
			{"qwen3", qwen, utf8.ValidString(s) && norm.NFC.IsNormalString(s)},
			{"llama3", llama, true},
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
			if !tc.ok {
				continue
			}
			if got := tc.tk.Decode(plain); got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q", tc.name, s, got)
			}
			if got := tc.tk.Decode(special); got != s {
				t.Errorf("%s: Decode(EncodeSpecial(%q)) = %q", tc.name, s, got)
			}
		}
	})
}
