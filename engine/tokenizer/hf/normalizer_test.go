package hf

import (
	"encoding/json"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// TestNormalizationMatchesReference runs the four forms on every code point and compares with the
// reference's results, probed by gen.mjs; then the reordering probe that reveals combining classes.
func TestNormalizationMatchesReference(t *testing.T) {
	t.Parallel()
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(readGz(t, "testdata/fixtures/normalization.json.gz"), &ref); err != nil {
		t.Fatal(err)
	}
	codePoints := func(yield func(rune) bool) {
		for r := rune(0); r < 0x110000; r++ {
			if (r < 0xD800 || r > 0xDFFF) && r != '\n' && !yield(r) {
				return
			}
		}
	}
	for name, f := range normForms {
		var pairs [][2]json.RawMessage
		if err := json.Unmarshal(ref[name], &pairs); err != nil {
			t.Fatal(err)
		}
		want := map[rune]string{}
		for _, p := range pairs {
			var c struct {
				C   rune
				Out []rune
			}
			if json.Unmarshal(p[0], &c.C) != nil || json.Unmarshal(p[1], &c.Out) != nil {
				t.Fatal("bad normalization fixture")
			}
			want[c.C] = string(c.Out)
		}
		bad := 0
		for r := range codePoints {
			w, ok := want[r]
			if !ok {
				w = string(r)
			}
			if got := normalize(f, string(r)); got != w {
				if bad < 5 {
					t.Errorf("%s(U+%04X) = %+q, reference %+q", name, r, got, w)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of the code points differ", name, bad)
		}
	}
	var reordered []rune
	if err := json.Unmarshal(ref["reordered"], &reordered); err != nil {
		t.Fatal(err)
	}
	want := map[rune]bool{}
	for _, r := range reordered {
		want[r] = true
	}
	bad := 0
	for r := range codePoints {
		s := string(r)
		got := normalize(norm.NFD, "a"+s+"\u0334") != "a"+s+"\u0334" || normalize(norm.NFD, "a\u0345"+s) != "a\u0345"+s
		if got != want[r] {
			if bad < 5 {
				t.Errorf("U+%04X: reordered by NFD %v, by the reference %v", r, got, want[r])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("reordering: %d code points differ", bad)
	}
}
