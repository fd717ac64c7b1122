package hf

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The scanners must find exactly the matches of their regexes. regexp2 is the independent implementation
// they are held against here; the parity fixtures hold both against the reference's Oniguruma.

var scannerPatterns = map[string]string{"gpt2": patternGPT2, "llama3": patternLlama3, "qwen2": patternQwen2}

// sameMatches compares the scanner of pattern with regexp2 on s and returns a description of the first
// difference, or "".
func sameMatches(t testing.TB, pattern, s string) string {
	sc, ok := scannerFor(pattern)
	if !ok {
		t.Fatalf("no scanner for %q", pattern)
	}
	re, err := compileRegex(pattern)
	if err != nil {
		t.Fatal(err)
	}
	// regexp2 folds case like .NET, where U+017F LONG S is not an s; Oniguruma (the reference) and the
	// scanners treat (?i)'s as matching it, which the fixtures check.
	if pattern != patternGPT2 && strings.ContainsRune(s, 'ſ') {
		return ""
	}
	got, want := sc.find(s, nil), re.find(s, nil)
	if !slices.Equal(got, want) {
		return "scanner " + render(s, got) + "\nregexp2 " + render(s, want)
	}
	return ""
}

func render(s string, spans []span) string {
	parts := make([]string, len(spans))
	for i, sp := range spans {
		parts[i] = s[sp.start:sp.end]
	}
	return fmt.Sprintf("%q", parts)
}

// TestScannersMatchRegexp runs the three scanners and regexp2 on every fixture string.
func TestScannersMatchRegexp(t *testing.T) {
	t.Parallel()
	f := readFixture(t, "qwen3")
	for name, pattern := range scannerPatterns {
		bad := 0
		for _, c := range f.Cases {
			if d := sameMatches(t, pattern, c.Text); d != "" {
				if bad < 3 {
					t.Errorf("%s on %q:\n%s", name, trunc(c.Text), d)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d strings differ", name, bad)
		}
	}
}

// FuzzScanners compares the scanners with regexp2 on arbitrary input, invalid UTF-8 included, except where
// the input holds a code point whose class the scanners take from a newer Unicode edition than Go's, whose
// tables regexp2 uses (classes.go; classes_test.go checks those code points against the reference itself):
// there the two differ by design, as "A\U00013eed" (a hieroglyph of Unicode 16, a letter to the reference)
// once showed.
func FuzzScanners(f *testing.F) {
	for _, s := range []string{"", "a", " 'S", "x\r\n\r\n y", "  \t\n a", "123456 7", "!!\n\n", "\xff\xfe 'll",
		"héllo wörld", "你好 123", "a\u00a0\u00a0b", " ?!\r\n", "000000000000A\U00013eed"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if newerThanGo(s) {
			t.Skip("a code point of a newer Unicode edition than regexp2's tables")
		}
		for name, pattern := range scannerPatterns {
			if d := sameMatches(t, pattern, s); d != "" {
				t.Fatalf("%s on %q:\n%s", name, s, d)
			}
		}
	})
}

// newerThanGo reports whether s holds a code point that the scanners class as a letter or number from a
// newer Unicode edition than Go's tables.
func newerThanGo(s string) bool {
	for _, r := range s {
		if isL(r) != unicode.IsLetter(r) || isN(r) != unicode.IsNumber(r) {
			return true
		}
	}
	return false
}
