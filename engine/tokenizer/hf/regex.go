package hf

import (
	"fmt"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// regexMatcher runs a Split pattern that has no hand-written scanner on regexp2, a backtracking engine with
// the lookarounds, \p{..} classes and inline flags that Go's regexp lacks (tokenizer.json patterns are
// written for Oniguruma). Known differences from Oniguruma, none of which the supported families' patterns
// reach because those run on scanners: case-insensitive matching follows .NET's simple lower-casing (so
// (?i)s does not match U+017F LONG S), and the Unicode tables are Go's.
type regexMatcher struct{ re *regexp2.Regexp }

func compileRegex(pattern string) (*regexMatcher, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("compile %q: %w", pattern, err)
	}
	return &regexMatcher{re: re}, nil
}

// find matches over the runes of s; invalid UTF-8 bytes become one U+FFFD each, so that match positions map
// back to exact byte offsets.
func (m *regexMatcher) find(s string, dst []span) []span {
	runes := make([]rune, 0, len(s))
	offs := make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		runes = append(runes, r)
		offs = append(offs, i)
		i += w
	}
	offs = append(offs, len(s))
	match, err := m.re.FindRunesMatch(runes)
	for err == nil && match != nil {
		dst = append(dst, span{offs[match.Index], offs[match.Index+match.Length]})
		match, err = m.re.FindNextMatch(match)
	}
	// err is only ever a match timeout, and none is set.
	return dst
}
