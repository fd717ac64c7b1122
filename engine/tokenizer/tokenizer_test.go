package tokenizer

import "testing"

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
