package hf

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScan reads the two large values of tokenizer.json, the vocabulary and the merges, without reflection:
// encoding/json spends most of a load assigning 150,000 map entries through reflect. The input has already
// been validated by encoding/json (it is a json.RawMessage of a parsed document), so this only has to
// check that the values have the expected shape.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\r' || s.b[s.i] == '\t') {
		s.i++
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *jsonScan) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *jsonScan) expect(c byte) error {
	if s.peek() != c {
		return fmt.Errorf("offset %d: expected %q", s.i, c)
	}
	s.i++
	return nil
}

// more consumes a ',' and reports true, or consumes the closing byte and reports false.
func (s *jsonScan) more(closing byte) (bool, error) {
	switch s.peek() {
	case ',':
		s.i++
		return true, nil
	case closing:
		s.i++
		return false, nil
	}
	return false, fmt.Errorf("offset %d: expected ',' or %q", s.i, closing)
}

// str reads a JSON string, decoding escapes as encoding/json does (an unpaired surrogate becomes U+FFFD).
// Without escapes the result shares the input's memory.
func (s *jsonScan) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	for s.i < len(s.b) && s.b[s.i] != '"' && s.b[s.i] != '\\' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '"' {
		s.i++
		return s.b[start : s.i-1 : s.i-1], nil
	}
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return out, nil
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, fmt.Errorf("offset %d: bad \\u escape", s.i)
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					if r2, ok = s.hex4(); !ok || utf16.DecodeRune(r, r2) == utf8.RuneError {
						s.i, r2 = save, -1
					}
				}
				if r2 >= 0 {
					r = utf16.DecodeRune(r, r2)
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, fmt.Errorf("offset %d: bad escape", s.i)
		}
	}
	return nil, errors.New("unterminated string")
}

func (s *jsonScan) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(v), true
}

// id reads a non-negative integer.
func (s *jsonScan) id() (int, error) {
	s.ws()
	start, v := s.i, 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' && s.i-start < 10 {
		v = v*10 + int(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
		return 0, fmt.Errorf("offset %d: expected a token id", start)
	}
	return v, nil
}

// parseVocab reads {"token": id, ...}.
func parseVocab(raw []byte) (map[string]int, error) {
	s := &jsonScan{b: raw}
	if s.peek() == 'n' || len(raw) == 0 {
		return nil, errors.New("missing")
	}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	if s.peek() == '}' {
		s.i++
		return map[string]int{}, nil
	}
	// The keys are gathered in one block and the map's strings cut from it: one allocation instead of one
	// per token (262,144 for Gemma).
	type entry struct{ end, id int }
	keys := make([]byte, 0, len(raw)/3)         // a vocabulary's keys take a third to a half of its JSON
	entries := make([]entry, 0, len(raw)/16+16) // entries average 16-25 bytes
	for done := false; !done; {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		v, err := s.id()
		if err != nil {
			return nil, fmt.Errorf("%q: %w", k, err)
		}
		keys = append(keys, k...)
		entries = append(entries, entry{len(keys), v})
		more, err := s.more('}')
		if err != nil {
			return nil, err
		}
		done = !more
	}
	all := string(keys)
	vocab := make(map[string]int, len(entries))
	start := 0
	for _, e := range entries {
		vocab[all[start:e.end]] = e.id
		start = e.end
	}
	return vocab, nil
}

// parseMerges reads merges in either format, "a b" strings (the original one, "#version" lines skipped)
// or [a, b] pairs (tokenizers ≥ 0.20, needed when a token contains a space), and calls f on each pair in
// order. The slices share the input's memory or are fresh copies (with escapes): they stay valid.
func parseMerges(raw []byte, f func(a, b []byte) error) error {
	s := &jsonScan{b: raw}
	if s.peek() == 'n' || len(raw) == 0 {
		return errors.New("missing")
	}
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		return nil
	}
	for n := 0; ; n++ {
		var a, b []byte
		var err error
		if s.peek() == '[' {
			s.i++
			if a, err = s.str(); err == nil {
				if err = s.expect(','); err == nil {
					if b, err = s.str(); err == nil {
						err = s.expect(']')
					}
				}
			}
			if err != nil {
				return fmt.Errorf("merge %d: want a pair of strings: %w", n, err)
			}
		} else {
			line, err := s.str()
			if err != nil {
				return fmt.Errorf("merge %d: %w", n, err)
			}
			if bytes.HasPrefix(line, []byte("#version")) {
				n--
				goto next
			}
			k := bytes.IndexByte(line, ' ')
			if k < 0 || bytes.IndexByte(line[k+1:], ' ') >= 0 {
				return fmt.Errorf("merge %d: %q is not two tokens separated by one space", n, line)
			}
			a, b = line[:k], line[k+1:]
		}
		if err := f(a, b); err != nil {
			return err // f names the merge itself: it may be resolving an earlier batch
		}
	next:
		if more, err := s.more(']'); err != nil || !more {
			return err
		}
	}
}

// skipString moves past a JSON string without decoding it; the value's own parser, or encoding/json,
// checks its escapes later.
func (s *jsonScan) skipString() error {
	if err := s.expect('"'); err != nil {
		return err
	}
	for {
		k := bytes.IndexByte(s.b[s.i:], '"')
		if k < 0 {
			return errors.New("unterminated string")
		}
		s.i += k + 1
		// The quote ends the string unless an odd number of backslashes escapes it.
		n := 0
		for j := s.i - 2; j >= 0 && s.b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return nil
		}
	}
}

// skipValue moves past one JSON value, nested or not. It only follows brackets and strings: whoever reads
// the value checks its grammar.
func (s *jsonScan) skipValue() error {
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\r', '\n':
			s.ws()
			continue
		case '"':
			if err := s.skipString(); err != nil {
				return err
			}
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return fmt.Errorf("offset %d: unexpected %q", s.i, c)
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return fmt.Errorf("offset %d: unexpected %q", s.i, c)
			}
			s.i++
			continue
		default:
			start := s.i
			for s.i < len(s.b) && !isDelimiter(s.b[s.i]) {
				s.i++
			}
			if s.i == start {
				return fmt.Errorf("offset %d: unexpected %q", s.i, c)
			}
		}
		if depth == 0 {
			return nil
		}
	}
	return errors.New("unexpected end")
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', ':', '[', ']', '{', '}', '"', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// object reads a JSON object at the scanner, calling field with each key while the scanner is at its
// value, which field must consume.
func (s *jsonScan) object(field func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.ws()
		if err := field(string(k)); err != nil {
			return errAt(string(k), err)
		}
		if more, err := s.more('}'); err != nil || !more {
			return err
		}
	}
}

// rawValue moves past one value and returns its bytes.
func (s *jsonScan) rawValue() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.skipValue(); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}
