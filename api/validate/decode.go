package validate

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// The decoder follows CPython's json module (which FastAPI uses to read
// bodies) closely enough that a client sees the same message and the same
// character position for a malformed body: "Expecting value" at 0 for an
// empty document, "Expecting ',' delimiter" after an unfinished member, and
// so on. Two deliberate differences: NaN and Infinity are rejected (they are
// not JSON, and no store downstream can hold them), and nesting is limited.

// SyntaxError is a malformed JSON document. Msg is the message CPython's
// json module gives and Pos the character (not byte) offset it reports.
type SyntaxError struct {
	Msg string
	Pos int
}

// Error implements the error interface.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s: char %d", e.Msg, e.Pos)
}

// ErrEncoding means the body is not UTF-8 text.
var ErrEncoding = errors.New("body is not valid UTF-8")

// MaxDepth is the deepest nesting of arrays and objects Decode accepts.
const MaxDepth = 512

// Decode parses a JSON document into the values described in value.go. A
// leading UTF-8 byte order mark is skipped, as Python does for bytes input.
// Errors are *SyntaxError or ErrEncoding.
func Decode(data []byte) (any, error) {
	data = trimBOM(data)
	if !utf8.Valid(data) {
		return nil, ErrEncoding
	}
	d := decoder{s: data}
	i := d.ws(0)
	v, end, err := d.value(i)
	if err != nil {
		return nil, d.syntaxError(err)
	}
	if end = d.ws(end); end != len(data) {
		return nil, d.syntaxError(errAt("Extra data", end))
	}
	return v, nil
}

func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// byteError is a syntax error at a byte offset, turned into a character
// offset once at the top.
type byteError struct {
	msg string
	at  int
}

func (e *byteError) Error() string { return e.msg }

func errAt(msg string, at int) error { return &byteError{msg: msg, at: at} }

type decoder struct {
	s     []byte
	depth int
}

func (d *decoder) syntaxError(err error) error {
	var be *byteError
	if !errors.As(err, &be) {
		return err
	}
	return &SyntaxError{Msg: be.msg, Pos: utf8.RuneCount(d.s[:be.at])}
}

func (d *decoder) ws(i int) int {
	for i < len(d.s) {
		switch d.s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (d *decoder) literal(i int, word string) bool {
	return len(d.s)-i >= len(word) && string(d.s[i:i+len(word)]) == word
}

// value parses the value starting at i and returns it with the offset just
// past it.
func (d *decoder) value(i int) (any, int, error) {
	if i >= len(d.s) {
		return nil, i, errAt("Expecting value", i)
	}
	switch c := d.s[i]; {
	case c == '"':
		return d.str(i)
	case c == '{':
		return d.object(i)
	case c == '[':
		return d.array(i)
	case c == 'n' && d.literal(i, "null"):
		return nil, i + 4, nil
	case c == 't' && d.literal(i, "true"):
		return true, i + 4, nil
	case c == 'f' && d.literal(i, "false"):
		return false, i + 5, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number(i)
	}
	return nil, i, errAt("Expecting value", i)
}

// number matches -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? at i and,
// like Python, stops before a '.' or 'e' that is not followed by digits.
func (d *decoder) number(i int) (any, int, error) {
	start, j := i, i
	if d.s[j] == '-' {
		j++
	}
	if j >= len(d.s) || !isDigit(d.s[j]) {
		return nil, start, errAt("Expecting value", start)
	}
	if d.s[j] == '0' {
		j++
	} else {
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
	}
	if j+1 < len(d.s) && d.s[j] == '.' && isDigit(d.s[j+1]) {
		j += 2
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
	}
	if j < len(d.s) && (d.s[j] == 'e' || d.s[j] == 'E') {
		k := j + 1
		if k < len(d.s) && (d.s[k] == '+' || d.s[k] == '-') {
			k++
		}
		if k < len(d.s) && isDigit(d.s[k]) {
			for k < len(d.s) && isDigit(d.s[k]) {
				k++
			}
			j = k
		}
	}
	return Number(d.s[start:j]), j, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (d *decoder) enter(i int) error {
	d.depth++
	if d.depth > MaxDepth {
		return errAt(fmt.Sprintf("Maximum nesting depth of %d exceeded", MaxDepth), i)
	}
	return nil
}

func (d *decoder) object(start int) (any, int, error) {
	if err := d.enter(start); err != nil {
		return nil, start, err
	}
	defer func() { d.depth-- }()
	o := &Object{}
	i := d.ws(start + 1)
	if i < len(d.s) && d.s[i] == '}' {
		o.raw = d.s[start : i+1]
		return o, i + 1, nil
	}
	for {
		if i >= len(d.s) || d.s[i] != '"' {
			return nil, i, errAt("Expecting property name enclosed in double quotes", i)
		}
		k, end, err := d.str(i)
		if err != nil {
			return nil, end, err
		}
		i = d.ws(end)
		if i >= len(d.s) || d.s[i] != ':' {
			return nil, i, errAt("Expecting ':' delimiter", i)
		}
		v, end, err := d.value(d.ws(i + 1))
		if err != nil {
			return nil, end, err
		}
		o.set(k.(string), v)
		i = d.ws(end)
		if i < len(d.s) && d.s[i] == '}' {
			o.raw = d.s[start : i+1]
			return o, i + 1, nil
		}
		if i >= len(d.s) || d.s[i] != ',' {
			return nil, i, errAt("Expecting ',' delimiter", i)
		}
		i = d.ws(i + 1)
	}
}

func (d *decoder) array(start int) (any, int, error) {
	if err := d.enter(start); err != nil {
		return nil, start, err
	}
	defer func() { d.depth-- }()
	items := []any{}
	i := d.ws(start + 1)
	if i < len(d.s) && d.s[i] == ']' {
		return items, i + 1, nil
	}
	for {
		v, end, err := d.value(i)
		if err != nil {
			return nil, end, err
		}
		items = append(items, v)
		i = d.ws(end)
		if i < len(d.s) && d.s[i] == ']' {
			return items, i + 1, nil
		}
		if i >= len(d.s) || d.s[i] != ',' {
			return nil, i, errAt("Expecting ',' delimiter", i)
		}
		i = d.ws(i + 1)
	}
}
