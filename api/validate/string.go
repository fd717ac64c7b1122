package validate

import (
	"strings"
	"unicode/utf16"
)

// String scanning follows CPython's scanstring: the same messages and the
// same positions for unterminated strings, control characters and bad
// escapes.

// str parses the string whose opening quote is at start.
func (d *decoder) str(start int) (any, int, error) {
	i := start + 1
	// Fast path: no escapes.
	for j := i; j < len(d.s); j++ {
		c := d.s[j]
		if c == '"' {
			return string(d.s[i:j]), j + 1, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, j, errAt("Invalid control character at", j)
		}
	}
	var b strings.Builder
	for {
		if i >= len(d.s) {
			return nil, start, errAt("Unterminated string starting at", start)
		}
		c := d.s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, nil
		case c < 0x20:
			return nil, i, errAt("Invalid control character at", i)
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(d.s) {
			return nil, start, errAt("Unterminated string starting at", start)
		}
		esc := d.s[i+1]
		if esc != 'u' {
			r, ok := simpleEscapes[esc]
			if !ok {
				return nil, i, errAt(`Invalid \escape`, i)
			}
			b.WriteByte(r)
			i += 2
			continue
		}
		r, ok := d.hex4(i + 2)
		if !ok {
			return nil, i + 1, errAt(`Invalid \uXXXX escape`, i+1)
		}
		i += 6
		if utf16.IsSurrogate(r) && r < 0xDC00 && i+1 < len(d.s) && d.s[i] == '\\' && d.s[i+1] == 'u' {
			if r2, ok := d.hex4(i + 2); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
		}
		// A lone surrogate cannot be held in a Go string; Python would keep
		// it, but no store downstream could, so it becomes U+FFFD.
		b.WriteRune(r)
	}
}

var simpleEscapes = map[byte]byte{
	'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
}

func (d *decoder) hex4(i int) (rune, bool) {
	if i+4 > len(d.s) {
		return 0, false
	}
	var r rune
	for _, c := range d.s[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
