package hf

import "unicode/utf8"

// The pre-tokenizer regexes of the supported families, as they appear in tokenizer.json, and hand-written
// scanners that find exactly the same matches (scanner_test.go holds them against the generic regexp engine
// and the parity fixtures against the reference). The generic engine backtracks over runes and is several
// times slower; these patterns are what nearly every byte-level BPE model uses.
const (
	// patternGPT2 is GPT-2's, also the built-in regex of the ByteLevel pre-tokenizer (use_regex).
	patternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// patternLlama3 is cl100k's, used by Llama 3.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternQwen2 is Qwen2's and Qwen3's: cl100k with single digits.
	patternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// scanner is one of those patterns as code. Its fields are the differences between GPT-2 and cl100k.
type scanner struct {
	foldContractions bool // (?i:'s|...) rather than 's|...
	anyLetterPrefix  bool // [^\r\n\p{L}\p{N}]?\p{L}+ rather than ' ?\p{L}+'
	maxDigits        int  // \p{N}{1,maxDigits}; 0 for GPT-2's ' ?\p{N}+'
	newlines         bool // punctuation takes trailing [\r\n]*, and \s*[\r\n]+ comes before \s+(?!\S)
}

// scannerFor returns the scanner of a known pattern.
func scannerFor(pattern string) (*scanner, bool) {
	switch pattern {
	case patternGPT2:
		return &scanner{}, true
	case patternLlama3:
		return &scanner{foldContractions: true, anyLetterPrefix: true, maxDigits: 3, newlines: true}, true
	case patternQwen2:
		return &scanner{foldContractions: true, anyLetterPrefix: true, maxDigits: 1, newlines: true}, true
	}
	return nil, false
}

// runeAt decodes the character at i; invalid UTF-8 decodes as U+FFFD one byte at a time, which is "other".
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// find appends the matches of the pattern in s to dst. The patterns match every character, so the
// matches tile s.
func (sc *scanner) find(s string, dst []span) []span {
	for i := 0; i < len(s); {
		end := sc.match(s, i)
		dst = append(dst, span{i, end})
		i = end
	}
	return dst
}

// match returns the end of the match that starts at i, trying the alternatives in the pattern's order.
func (sc *scanner) match(s string, i int) int {
	r, w := runeAt(s, i)
	if r == '\'' {
		if n := sc.contraction(s[i+1:]); n > 0 {
			return i + 1 + n
		}
	}
	// Letters, with one optional prefix character.
	if isL(r) {
		return sc.run(s, i+w, isL)
	}
	if r2, w2 := runeAt(s, i+w); w2 > 0 && isL(r2) {
		if sc.anyLetterPrefix && r != '\r' && r != '\n' && !isN(r) || !sc.anyLetterPrefix && r == ' ' {
			return sc.run(s, i+w+w2, isL)
		}
	}
	// Numbers.
	if sc.maxDigits > 0 {
		if isN(r) {
			end := i + w
			for k := 1; k < sc.maxDigits; k++ {
				r2, w2 := runeAt(s, end)
				if w2 == 0 || !isN(r2) {
					break
				}
				end += w2
			}
			return end
		}
	} else {
		if isN(r) {
			return sc.run(s, i+w, isN)
		}
		if r2, w2 := runeAt(s, i+w); r == ' ' && w2 > 0 && isN(r2) {
			return sc.run(s, i+w+w2, isN)
		}
	}
	// Everything else: ' ?[^\s\p{L}\p{N}]+', cl100k then takes the newlines that follow.
	start := i
	if r == ' ' {
		if r2, w2 := runeAt(s, i+w); w2 > 0 && isOther(r2) {
			start = i + w
		}
	}
	if r2, _ := runeAt(s, start); start < len(s) && isOther(r2) {
		end := sc.run(s, start, isOther)
		if sc.newlines {
			for end < len(s) && (s[end] == '\r' || s[end] == '\n') {
				end++
			}
		}
		return end
	}
	// Whitespace: r is a space character here.
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		r2, w2 := runeAt(s, end)
		if !isSpace(r2) {
			break
		}
		if r2 == '\r' || r2 == '\n' {
			lastNL = end
		}
		lastStart = end
		end += w2
	}
	if sc.newlines && lastNL >= 0 { // \s*[\r\n]+ backtracks to the last newline of the run
		return lastNL + 1
	}
	if end == len(s) || lastStart == i { // \s+(?!\S) at the end of text, else \s+ of one character
		return end
	}
	return lastStart // \s+(?!\S) leaves the run's last space to the word that follows
}

// run returns the end of the run of characters in class that starts at i.
func (sc *scanner) run(s string, i int, class func(rune) bool) int {
	for i < len(s) {
		r, w := runeAt(s, i)
		if !class(r) {
			break
		}
		i += w
	}
	return i
}

// contractions in the pattern's order; none is a prefix of another, so the first that matches is the match.
var contractions = []string{"s", "t", "re", "ve", "m", "ll", "d"}

// contraction returns the length of the contraction suffix at the start of s (after the apostrophe), or 0.
func (sc *scanner) contraction(s string) int {
	for _, c := range contractions {
		n, ok := 0, true
		for k := 0; k < len(c); k++ {
			r, w := runeAt(s, n)
			if !(r == rune(c[k]) || sc.foldContractions && foldsTo(r, c[k])) {
				ok = false
				break
			}
			n += w
		}
		if ok {
			return n
		}
	}
	return 0
}

// foldsTo reports whether r matches the lower-case ASCII letter c case-insensitively: its upper case, and
// U+017F LONG S for s, which Unicode case folding maps to s.
func foldsTo(r rune, c byte) bool {
	return r == rune(c-'a'+'A') || c == 's' && r == 'ſ'
}
