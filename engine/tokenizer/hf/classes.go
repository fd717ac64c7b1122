package hf

import (
	"unicode"
	"unicode/utf8"
)

// Character classes of the pre-tokenizers. The reference matches its Split regexes with Oniguruma, whose
// tables are Unicode 16.0, and its Digits with Rust's char::is_numeric (Unicode 17.0); Go's unicode package
// is Unicode 15.0. The tables below are the code points the newer editions added to those classes, as probed
// from the reference itself (testdata/fixtures/classes.json.gz, checked code point by code point in
// classes_test.go), so that text in the newest scripts splits as the reference splits it.
var (
	// newerLetters are \p{L} in Unicode 15.1 and 16.0 but not in Go's tables.
	newerLetters = &unicode.RangeTable{
		R16: []unicode.Range16{{0x1C89, 0x1C8A, 1}, {0xA7CB, 0xA7CD, 1}, {0xA7DA, 0xA7DC, 1}},
		R32: []unicode.Range32{{0x105C0, 0x105F3, 1}, {0x10D4A, 0x10D65, 1}, {0x10D6F, 0x10D85, 1},
			{0x10EC2, 0x10EC4, 1}, {0x11380, 0x11389, 1}, {0x1138B, 0x1138E, 3}, {0x11390, 0x113B5, 1},
			{0x113B7, 0x113D1, 0x1A}, {0x113D3, 0x113D3, 1}, {0x11BC0, 0x11BE0, 1}, {0x13460, 0x143FA, 1},
			{0x16100, 0x1611D, 1}, {0x16D40, 0x16D6C, 1}, {0x18CFF, 0x18CFF, 1}, {0x1E5D0, 0x1E5ED, 1},
			{0x1E5F0, 0x1E5F0, 1}, {0x2EBF0, 0x2EE5D, 1}},
	}
	// newerNumbers are \p{N} in Unicode 16.0 but not in Go's tables.
	newerNumbers = &unicode.RangeTable{
		R32: []unicode.Range32{{0x10D40, 0x10D49, 1}, {0x116D0, 0x116E3, 1}, {0x11BF0, 0x11BF9, 1},
			{0x16130, 0x16139, 1}, {0x16D70, 0x16D79, 1}, {0x1CCF0, 0x1CCF9, 1}, {0x1E5F1, 0x1E5FA, 1}},
	}
	// newestNumeric are numeric in Unicode 17.0 (Rust's is_numeric) and in neither of the tables above.
	newestNumeric = &unicode.RangeTable{
		R32: []unicode.Range32{{0x11DE0, 0x11DE9, 1}, {0x16FF4, 0x16FF6, 1}},
	}
)

// isL is \p{L}.
func isL(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r) || r >= 0x1C89 && unicode.Is(newerLetters, r)
}

// isN is \p{N}.
func isN(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r) || r >= 0x10D40 && unicode.Is(newerNumbers, r)
}

// isSpace is \s: Unicode White_Space, the same set in every edition since 6.3.
func isSpace(r rune) bool { return unicode.IsSpace(r) }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !isSpace(r) && !isL(r) && !isN(r) }

// isNumeric is Rust's char::is_numeric, which the Digits pre-tokenizer uses.
func isNumeric(r rune) bool { return isN(r) || r >= 0x11DE0 && unicode.Is(newestNumeric, r) }
