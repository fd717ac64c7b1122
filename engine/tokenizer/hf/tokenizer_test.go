package hf

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestQwen3Tokens(t *testing.T) {
	tk := loadDir(t, qwen3Dir)
	if got := tk.VocabSize(); got != 151669 {
		t.Errorf("VocabSize = %d, want 151669 (151643 BPE tokens + 26 added)", got)
	}
	imStart, _ := tk.TokenID("<|im_start|>")
	imEnd, ok := tk.TokenID("<|im_end|>")
	if imStart != 151644 || imEnd != 151645 || !ok {
		t.Errorf("TokenID: <|im_start|> %d, <|im_end|> %d %v", imStart, imEnd, ok)
	}
	if id, ok := tk.TokenID("Ġhello"); !ok || id != 23811 {
		t.Errorf(`TokenID("Ġhello") = %d %v, want 23811 (vocabulary entries in the file's spelling)`, id, ok)
	}
	if _, ok := tk.TokenID("<|not_a_token|>"); ok {
		t.Error("TokenID found an unknown token")
	}
	think, _ := tk.TokenID("<think>")
	if !tk.IsSpecial(imEnd) || tk.IsSpecial(think) || !tk.IsAdded(think) || tk.IsSpecial(100) || tk.IsAdded(100) {
		t.Error("IsSpecial/IsAdded: <|im_end|> is special, <think> is added but not special, 100 is neither")
	}
	if id, ok := tk.EOS(); !ok || id != imEnd {
		t.Errorf("EOS = %d %v, want <|im_end|>", id, ok)
	}
	if id, ok := tk.PAD(); !ok || id != 151643 {
		t.Errorf("PAD = %d %v, want <|endoftext|>", id, ok)
	}
	if _, ok := tk.BOS(); ok {
		t.Error("Qwen3 has no BOS")
	}
	if tpl, ok := tk.ChatTemplate(""); !ok || !bytes.Contains([]byte(tpl), []byte("<|im_start|>")) {
		t.Error("ChatTemplate: missing")
	}
	if got := tk.AddedTokens(); len(got) != 26 || got[0] != "<|endoftext|>" {
		t.Errorf("AddedTokens = %d tokens starting %q", len(got), got[0])
	}

	// User text cannot forge a turn marker; a rendered template gets the real one.
	text := "<|im_start|>user"
	if got := tk.EncodeSpecial(text); got[0] != imStart {
		t.Errorf("EncodeSpecial(%q) = %v, want <|im_start|> first", text, got)
	}
	if got := tk.Encode(text); slices.Contains(got, imStart) || tk.Decode(got) != text {
		t.Errorf("Encode(%q) = %v: must be plain text", text, got)
	}
	if got := tk.Decode([]int{imStart, -1, 1 << 30}); got != "<|im_start|>" {
		t.Errorf("Decode skips unknown ids: got %q", got)
	}
}

// TestTokenBytesPartialUTF8 finds tokens that end inside a character: streaming must hold their bytes back.
func TestTokenBytesPartialUTF8(t *testing.T) {
	tk := loadDir(t, qwen3Dir)
	s := "𝕳𝖊𝖑𝖑𝖔 🫠 ᏣᎳᎩ"
	ids := tk.Encode(s)
	var joined []byte
	partial := 0
	for _, id := range ids {
		b := tk.TokenBytes(id)
		if !utf8.Valid(b) {
			partial++
		}
		joined = append(joined, b...)
	}
	if string(joined) != s || partial == 0 {
		t.Errorf("TokenBytes of %v: joined %q, %d partial tokens (want > 0)", ids, joined, partial)
	}
	if tk.TokenBytes(-1) != nil || tk.TokenBytes(tk.VocabSize()) != nil {
		t.Error("TokenBytes out of range must be nil")
	}
}

func TestLlama3Tokens(t *testing.T) {
	tk := loadDir(t, llama3Dir)
	if got := tk.VocabSize(); got != 128256 {
		t.Errorf("VocabSize = %d, want 128256", got)
	}
	bos, okB := tk.BOS()
	eos, okE := tk.EOS()
	if bos != 128000 || eos != 128001 || !okB || !okE {
		t.Errorf("BOS %d, EOS %d", bos, eos)
	}
	eot, _ := tk.TokenID("<|eot_id|>")
	if got := tk.EncodeSpecial("<|begin_of_text|>hi<|eot_id|>"); got[0] != bos || got[len(got)-1] != eot {
		t.Errorf("EncodeSpecial = %v", got)
	}
	// ignore_merges: a whole word in the vocabulary is that token even when the merges would not reach it.
	if got := tk.Encode(" Hello"); len(got) != 1 {
		t.Errorf("Encode(\" Hello\") = %v, want one token", got)
	}
}

// TestConcurrentEncode encodes from several goroutines at once (run with -race to check the cache).
func TestConcurrentEncode(t *testing.T) {
	tk := loadDir(t, qwen3Dir)
	f := readFixture(t, "qwen3")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(f.Cases); i += 7 {
				if got := tk.EncodeSpecial(f.Cases[i].Text); !slices.Equal(got, f.Cases[i].IDs) {
					t.Errorf("case %d differs under concurrency", i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestGemma3Tokens(t *testing.T) {
	tk := loadDir(t, gemma3Dir)
	if got := tk.VocabSize(); got != 262145 {
		t.Errorf("VocabSize = %d, want 262145 (262,144 tokens and <image_soft_token>)", got)
	}
	bos, okB := tk.BOS()
	eos, okE := tk.EOS()
	eot, _ := tk.TokenID("<end_of_turn>")
	if bos != 2 || eos != 106 || eot != 106 || !okB || !okE {
		t.Errorf("BOS %d, EOS %d, <end_of_turn> %d", bos, eos, eot)
	}
	// A rendered turn: the markers are single tokens, spaces are "▁" inside words' tokens.
	ids := tk.EncodeSpecial("<bos><start_of_turn>user\nHi there<end_of_turn>\n")
	if ids[0] != bos || ids[1] != 105 || ids[len(ids)-2] != eot || tk.Decode(ids) != "<bos><start_of_turn>user\nHi there<end_of_turn>\n" {
		t.Errorf("EncodeSpecial = %v, decoded %q", ids, tk.Decode(ids))
	}
	if id, ok := tk.TokenID("▁there"); !ok || string(tk.TokenBytes(id)) != " there" {
		t.Errorf("TokenBytes(▁there) = %q", tk.TokenBytes(id))
	}
	// No "▁" in front of the text: Gemma's normalizer only replaces spaces.
	if got := tk.Encode("Hi"); len(got) != 1 || string(tk.TokenBytes(got[0])) != "Hi" {
		t.Errorf("Encode(Hi) = %v", got)
	}
}

func TestLlama2Tokens(t *testing.T) {
	tk := loadDir(t, llama2Dir)
	if got := tk.VocabSize(); got != 32000 {
		t.Errorf("VocabSize = %d, want 32000", got)
	}
	bos, _ := tk.BOS()
	eos, _ := tk.EOS()
	if bos != 1 || eos != 2 {
		t.Errorf("BOS %d, EOS %d", bos, eos)
	}
	// The Prepend normalizer puts "▁" in front of the text, and the decoder's Strip takes it off again;
	// TokenBytes keep it, as a stream shows it.
	ids := tk.Encode("Hello")
	if len(ids) != 1 || string(tk.TokenBytes(ids[0])) != " Hello" || tk.Decode(ids) != "Hello" {
		t.Errorf("Encode(Hello) = %v, bytes %q, decoded %q", ids, tk.TokenBytes(ids[0]), tk.Decode(ids))
	}
	// A character outside the vocabulary is its UTF-8 bytes, one byte-fallback token each.
	ids = tk.Encode("🫠")
	var b []byte
	for _, id := range ids[1:] {
		b = append(b, tk.TokenBytes(id)...)
	}
	if len(ids) != 5 || string(b) != "🫠" {
		t.Errorf("Encode(🫠) = %v (%q)", ids, b)
	}
}
