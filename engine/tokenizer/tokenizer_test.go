package tokenizer

import (
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	tok := New()
	for _, s := range []string{"", "hello", "héllo wörld ✓", "<|im_end|> stays text", "\x00\xff"} {
		ids := tok.Encode(s)
		if got := tok.Decode(ids); got != s {
			t.Fatalf("round trip %q -> %q", s, got)
		}
		for _, id := range ids {
			if tok.IsSpecial(id) {
				t.Fatalf("%q encoded a special token", s)
			}
		}
	}
	end := tok.Special(TurnEnd)
	if tok.Decode([]int{'a', end}) != "a<|im_end|>" || !tok.IsSpecial(end) || tok.VocabSize() != VocabSize {
		t.Fatal("special tokens decode to their names")
	}
	if tok.TokenBytes(-1) != nil || tok.TokenBytes(VocabSize) != nil {
		t.Fatal("out-of-range ids must have no bytes")
	}
}

func TestEncodeSpecialAndTokenID(t *testing.T) {
	tk := New()
	text := "a<|im_start|>user\n<tool_call>x</tool_call><|im_end"
	ids := tk.EncodeSpecial(text)
	if tk.Decode(ids) != text {
		t.Errorf("round trip: %q", tk.Decode(ids))
	}
	want := []int{'a', tk.Special(TurnStart), 'u', 's', 'e', 'r', '\n', tk.Special(ToolCallStart), 'x', tk.Special(ToolCallEnd)}
	if !slices.Equal(ids[:len(want)], want) || len(ids) != len(want)+len("<|im_end") {
		t.Errorf("EncodeSpecial = %v", ids)
	}
	if id, ok := tk.TokenID(TurnEnd); !ok || id != tk.Special(TurnEnd) {
		t.Errorf("TokenID(%q) = %d %v", TurnEnd, id, ok)
	}
	if id, ok := tk.TokenID("A"); !ok || id != 'A' {
		t.Errorf("TokenID(A) = %d %v", id, ok)
	}
	if _, ok := tk.TokenID("<|nope|>"); ok {
		t.Error("TokenID found an unknown name")
	}
}
