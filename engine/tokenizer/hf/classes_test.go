package hf

import (
	"encoding/json"
	"testing"
)

// TestClassesMatchReference compares the character classes with the reference's, probed for every code
// point by gen.mjs: Oniguruma's \p{L}, \p{N}, \s and Rust's char::is_numeric.
func TestClassesMatchReference(t *testing.T) {
	t.Parallel()
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(readGz(t, "testdata/fixtures/classes.json.gz"), &ref); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sep  rune // the probe's separator, which it could not classify
		in   func(rune) bool
	}{{"L", '!', isL}, {"N", '!', isN}, {"S", '!', isSpace}, {"numeric", 'a', isNumeric}} {
		var ranges [][2]rune
		if err := json.Unmarshal(ref[c.name], &ranges); err != nil {
			t.Fatal(err)
		}
		want := make([]bool, 0x110000)
		for _, r := range ranges {
			for x := r[0]; x <= r[1]; x++ {
				want[x] = true
			}
		}
		bad := 0
		for r := rune(0); r < 0x110000; r++ {
			if r >= 0xD800 && r <= 0xDFFF || r == c.sep {
				continue
			}
			if c.in(r) != want[r] {
				if bad < 5 {
					t.Errorf("%s: U+%04X: got %v, reference %v", c.name, r, c.in(r), want[r])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d code points differ", c.name, bad)
		}
	}
}
