package serving

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/tokenizer/hf"
)

// loadFetchedTokenizer loads a tokenizer that `make tokenizer-files` fetches into engine/tokenizer/hf's
// testdata (Gemma 3's, Llama 2's): skipped when absent, except under CI.
func loadFetchedTokenizer(t *testing.T, name string) *hf.Tokenizer {
	t.Helper()
	dir := filepath.Join("..", "engine", "tokenizer", "hf", "testdata", name)
	read := func(file string) []byte {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			if os.Getenv("CI") == "" && os.IsNotExist(err) {
				t.Skipf("%s is missing: run `make tokenizer-files`", dir)
			}
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tok, err := hf.New(read("tokenizer.json.gz"), read("tokenizer_config.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestStreamByteFallback streams completions of SentencePiece-style tokenizers whose characters the
// vocabulary lacks: each becomes one byte-fallback token per UTF-8 byte (<0xF0> <0x9F> <0xAB> <0xA0> for
// 🫠 in Llama 2), so a character is only complete after several tokens. Every delta must be valid UTF-8,
// the deltas must add up to the non-streamed choice, and the text must be the tokens' bytes, which is the
// tokenizer's decoding (Llama 2's answer keeps the leading space of its first "▁" token, as vLLM's
// incremental detokenizer does; decoding the ids alone strips it).
func TestStreamByteFallback(t *testing.T) {
	text := "Olá 🫠 — 𝕳𝖊𝖑𝖑𝖔, ᏣᎳᎩ 𐌰𐌱𐌲 \U0001FAE8\U0001FAE9 你好 x\U0010FFFD y"
	for _, name := range []string{"gemma3", "llama2"} {
		t.Run(name, func(t *testing.T) {
			tok := loadFetchedTokenizer(t, name)
			ids := tok.Encode(text)
			var tokens []engine.SampledToken
			var all strings.Builder
			partial := 0
			for _, id := range ids {
				b := tok.TokenBytes(id)
				if len(b) == 1 && b[0] >= utf8.RuneSelf {
					partial++ // a byte-fallback token: part of a character
				}
				all.Write(b)
				tokens = append(tokens, engine.SampledToken{TokenLogprob: engine.TokenLogprob{ID: id, Bytes: b, Logprob: -1}})
			}
			if partial < 8 {
				t.Fatalf("only %d byte-fallback tokens in %v: the test needs characters split over several tokens", partial, ids)
			}
			deltas, ch := buildWith(t, tok.IsSpecial, tokens)
			want := text
			if name == "llama2" {
				want = " " + text
			}
			got := ch.Message.Content.Text()
			if got != all.String() || got != want || tok.Decode(ids) != text {
				t.Errorf("content %q, tokens' bytes %q, Decode %q, want %q", got, all.String(), tok.Decode(ids), want)
			}
			t.Logf("%d tokens, %d of them byte-fallback, %d deltas", len(tokens), partial, len(deltas))
			if len(deltas) >= len(tokens) {
				t.Errorf("%d deltas for %d tokens: no partial character was held back", len(deltas), len(tokens))
			}
		})
	}
}

// buildWith runs tokens through a streaming builder and returns its content deltas and choice, checking
// that every delta is valid UTF-8 and that they add up to the choice.
func buildWith(t *testing.T, isSpecial func(int) bool, tokens []engine.SampledToken) ([]Delta, trainyard.Choice) {
	t.Helper()
	var deltas []Delta
	b := &choiceBuilder{isSpecial: isSpecial, callStart: -1, callEnd: -1,
		emit: func(d Delta) error {
			if d.Content != "" {
				deltas = append(deltas, d)
			}
			return nil
		}}
	for _, tk := range tokens {
		if err := b.push(tk); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := b.finish("stop")
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	for _, d := range deltas {
		if !utf8.ValidString(d.Content) {
			t.Errorf("delta %q is not valid UTF-8", d.Content)
		}
		streamed.WriteString(d.Content)
	}
	if streamed.String() != ch.Message.Content.Text() {
		t.Errorf("streamed %q, choice %q", streamed.String(), ch.Message.Content.Text())
	}
	return deltas, ch
}
