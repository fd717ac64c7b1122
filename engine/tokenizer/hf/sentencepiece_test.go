package hf

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// spJSON is a small SentencePiece-style tokenizer.json, shaped like Llama 2's (Prepend and Replace
// normalizers, no pre-tokenizer, byte fallback, Replace/ByteFallback/Fuse/Strip decoder): characters
// "▁ a b > <", a few merges (">▁<" crosses a word boundary, as Gemma's ">▁</" does) and the 256 byte
// tokens; edit modifies the document before it is encoded.
func spJSON(t *testing.T, edit func(doc map[string]any)) []byte {
	t.Helper()
	vocab := map[string]any{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := 0; b < 256; b++ {
		vocab[byteTokenName(byte(b))] = 3 + b
	}
	merges := []any{"▁ a", "a b", "▁a b", "> ▁", ">▁ <", "▁ ▁", "b b"}
	for i, tok := range []string{"▁", "a", "b", ">", "<", "▁a", "ab", "▁ab", ">▁", ">▁<", "▁▁", "bb"} {
		vocab[tok] = 259 + i
	}
	rep := func(from, to string) map[string]any {
		return map[string]any{"type": "Replace", "pattern": map[string]any{"String": from}, "content": to}
	}
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 0, "content": "<unk>", "special": true},
			map[string]any{"id": 1, "content": "<s>", "special": true},
			map[string]any{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"}, rep(" ", "▁")}},
		"pre_tokenizer": nil,
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{rep("▁", " "), map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"}, map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "unk_token": "<unk>", "fuse_unk": true,
			"byte_fallback": true},
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

func newSP(t *testing.T, edit func(doc map[string]any)) *Tokenizer {
	t.Helper()
	tk, err := New(spJSON(t, edit), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestSentencePieceTiny(t *testing.T) {
	tk := newSP(t, nil)
	id := func(tok string) int {
		i, ok := tk.TokenID(tok)
		if !ok {
			t.Fatalf("no token %q", tok)
		}
		return i
	}
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"ab", []string{"▁ab"}},
		{"ab ab", []string{"▁ab", "▁ab"}},
		{"a> <b", []string{"▁a", ">▁<", "b"}},
		{"é", []string{"▁", "<0xC3>", "<0xA9>"}},
		// Bytes that are not UTF-8 are their byte tokens, so they round-trip too.
		{"a\xff", []string{"▁a", "<0xFF>"}},
		{"", nil},
	} {
		var want []int
		for _, tok := range tc.want {
			want = append(want, id(tok))
		}
		if got := tk.Encode(tc.text); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v %q", tc.text, got, want, tc.want)
		}
		if got := tk.Decode(tk.Encode(tc.text)); got != tc.text {
			t.Errorf("Decode(Encode(%q)) = %q", tc.text, got)
		}
	}
	// Added tokens split the text before normalizing: each stretch gets its own "▁" (Llama 2's legacy
	// behaviour), and decoding keeps the spaces after them; only the very first one is stripped.
	if got, want := tk.EncodeSpecial("<s>ab</s>ab"), []int{1, id("▁ab"), 2, id("▁ab")}; !slices.Equal(got, want) {
		t.Errorf("EncodeSpecial = %v, want %v", got, want)
	}
	if got := tk.Decode([]int{1, id("▁ab"), 2, id("▁ab")}); got != "<s> ab</s> ab" {
		t.Errorf("Decode = %q", got)
	}
	// TokenBytes are what a stream concatenates: "▁" is a space, a byte token its byte.
	if b := tk.TokenBytes(id("▁ab")); string(b) != " ab" {
		t.Errorf("TokenBytes(▁ab) = %q", b)
	}
	if b := tk.TokenBytes(id("<0xC3>")); len(b) != 1 || b[0] != 0xC3 {
		t.Errorf("TokenBytes(<0xC3>) = %q", b)
	}
}

// TestWordCutsAreExact: cutting a SentencePiece piece into words before "▁" (appendWords) gives the same
// ids as merging it whole, on random text over the tiny vocabulary's characters, whose ">▁<" token makes
// a ">" before "▁" a place where merges cross and no cut may be made.
func TestWordCutsAreExact(t *testing.T) {
	cut := newSP(t, nil)
	whole := newSP(t, nil)
	whole.model.cutWords = false
	if !cut.model.cutWords || !cut.model.crossesMeta['>'] || cut.model.crossesMeta['a'] {
		t.Fatalf("cutWords %v, crossing characters %v", cut.model.cutWords, cut.model.crossesMeta)
	}
	chars := []string{"a", "b", " ", ">", "<", "é", "\xff", "▁"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		var sb strings.Builder
		for n := r.IntN(30); n > 0; n-- {
			sb.WriteString(chars[r.IntN(len(chars))])
		}
		s := sb.String()
		if got, want := cut.Encode(s), whole.Encode(s); !slices.Equal(got, want) {
			t.Fatalf("%q: cut into words %v, whole %v", s, got, want)
		}
	}
}

func TestSentencePieceUnknown(t *testing.T) {
	noFallback := func(fuse bool) func(map[string]any) {
		return func(d map[string]any) {
			m := d["model"].(map[string]any)
			m["byte_fallback"], m["fuse_unk"] = false, fuse
		}
	}
	for _, tc := range []struct {
		fuse bool
		want []int
	}{{true, []int{259 + 5, 0, 259 + 1}}, {false, []int{259 + 5, 0, 0, 259 + 1}}} {
		tk := newSP(t, noFallback(tc.fuse))
		if got := tk.Encode("aéèa"); !slices.Equal(got, tc.want) {
			t.Errorf("fuse_unk %v: Encode = %v, want %v", tc.fuse, got, tc.want)
		}
	}
}

// TestMetaspace: the Metaspace pre-tokenizer's prepend schemes (first: only where the input starts, not
// after an added token) and the Metaspace decoder, which drops the first token's "▁".
func TestMetaspace(t *testing.T) {
	ms := func(scheme string, split bool) map[string]any {
		return map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split}
	}
	for _, tc := range []struct {
		scheme string
		text   string
		want   []string
	}{
		{"first", "ab<s>ab", []string{"▁ab", "<s>", "ab"}},
		{"always", "ab<s>ab", []string{"▁ab", "<s>", "▁ab"}},
		{"never", "ab<s> ab", []string{"ab", "<s>", "▁ab"}},
		{"first", " ab", []string{"▁ab"}},
	} {
		tk := newSP(t, func(d map[string]any) {
			d["normalizer"] = nil
			d["pre_tokenizer"] = ms(tc.scheme, true)
			d["decoder"] = ms(tc.scheme, true)
		})
		var want []int
		for _, s := range tc.want {
			id, _ := tk.TokenID(s)
			want = append(want, id)
		}
		ids := tk.EncodeSpecial(tc.text)
		if !slices.Equal(ids, want) {
			t.Errorf("%s: EncodeSpecial(%q) = %v, want %v %q", tc.scheme, tc.text, ids, want, tc.want)
		}
		dec := tk.Decode(ids)
		if wantDec := strings.TrimPrefix(strings.ReplaceAll(strings.Join(tc.want, ""), "▁", " "), " "); tc.scheme != "never" && dec != wantDec {
			t.Errorf("%s: Decode = %q, want %q", tc.scheme, dec, wantDec)
		}
	}
}

func TestSentencePieceLoadErrors(t *testing.T) {
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
	seq := func(steps ...string) map[string]any {
		var ds []any
		for _, s := range steps {
			ds = append(ds, map[string]any{"type": s, "pattern": map[string]any{"String": "▁"}, "content": " "})
		}
		return map[string]any{"type": "Sequence", "decoders": ds}
	}
	for _, tc := range []struct {
		name, field string
		edit        func(map[string]any)
		unsupported bool
	}{
		{"no byte token", "model.vocab", func(d map[string]any) {
			delete(d["model"].(map[string]any)["vocab"].(map[string]any), "<0x41>")
		}, true},
		{"no fallback, no unk", "model.unk_token", func(d map[string]any) {
			set("model.byte_fallback", false)(d)
			set("model.unk_token", nil)(d)
		}, true},
		{"unk not in vocab", "model.unk_token", set("model.unk_token", "<nope>"), false},
		{"no decoder", "decoder", set("decoder", nil), true},
		{"byte-level decoder", "decoder.type", set("decoder", map[string]any{"type": "ByteLevel"}), true},
		{"replace after byte fallback", "decoder.decoders[1].type", set("decoder", seq("ByteFallback", "Replace", "Fuse")), true},
		{"byte fallback after fuse", "decoder.decoders[1].type", set("decoder", seq("Fuse", "ByteFallback")), true},
		{"metaspace after fuse", "decoder.decoders[1].type", set("decoder", seq("Fuse", "Metaspace")), true},
		{"prepend scheme", "pre_tokenizer.add_prefix_space", set("pre_tokenizer", map[string]any{"type": "Metaspace", "add_prefix_space": false}), false},
		{"strip content", "decoder.content", set("decoder", map[string]any{"type": "Strip", "content": "ab", "start": 1}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(spJSON(t, tc.edit), nil)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a LoadError", err)
			}
			if !strings.HasPrefix(le.Field, tc.field) {
				t.Errorf("error %q: field %q, want %q", err, le.Field, tc.field)
			}
			if errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Errorf("error %q: unsupported = %v", err, !tc.unsupported)
			}
		})
	}
}

// TestStripDecoder holds the Strip step to the reference's rule, including text made only of the content
// character (where the reference panics; here it becomes empty).
func TestStripDecoder(t *testing.T) {
	for _, tc := range []struct {
		s           string
		start, stop int
		want        string
	}{{"  a  ", 1, 0, " a  "}, {"  a  ", 2, 3, "a"}, {" ", 1, 1, ""}, {"", 0, 2, ""}, {"\xff ", 1, 1, "\xff"}} {
		if got := (stripStep{' ', tc.start, tc.stop}).apply(tc.s); got != tc.want {
			t.Errorf("Strip(%q, %d, %d) = %q, want %q", tc.s, tc.start, tc.stop, got, tc.want)
		}
	}
}
