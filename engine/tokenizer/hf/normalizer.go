package hf

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer is the chain of steps of tokenizer.json's normalizer (one step, or a Sequence of them); nil when
// the file has none.
type normalizer []normStep

// normStep is one normalizer: a Unicode normalization form, Replace or Prepend.
type normStep interface{ apply(s string) string }

var normForms = map[string]norm.Form{"NFC": norm.NFC, "NFD": norm.NFD, "NFKC": norm.NFKC, "NFKD": norm.NFKD}

func (n normalizer) apply(s string) string {
	for _, st := range n {
		s = st.apply(s)
	}
	return s
}

// formStep is a Unicode normalization form applied as the reference does.
type formStep struct{ f norm.Form }

func (f formStep) apply(s string) string { return normalize(f.f, s) }

// prependStep is the Prepend normalizer: the text gains a prefix unless it is empty (Llama 2 prepends "▁",
// so every stretch of text between added tokens starts a word).
type prependStep string

func (p prependStep) apply(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

// replacer replaces every match of a pattern (a literal, or a regex run on the generic engine) with content:
// the Replace normalizer and the Replace decoder.
type replacer struct {
	literal string  // the pattern when it is a plain string
	m       matcher // otherwise
	content string
}

func (r *replacer) apply(s string) string {
	if r.m == nil {
		return strings.ReplaceAll(s, r.literal, r.content)
	}
	spans := r.m.find(s, nil)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(r.content)
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// The reference normalizes with tables of an older Unicode edition (before 10.0) than Go's (15.0).
// Normalization is stable for characters both editions know, so the results differ only on characters the
// older one lacks, which it leaves alone and treats as starters (combining class 0). unknownToReference
// lists the newer characters for which that matters: those with a decomposition or a non-zero combining
// class in Go's tables, and U+11930, the second half of the composite U+11938. Text is normalized in the
// stretches between them and they are kept as they are, which is exactly what the older tables do.
// Probed from the reference and checked on every code point in normalizer_test.go.
var unknownToReference = &unicode.RangeTable{
	R16: []unicode.Range16{{0x07FD, 0x07FD, 1}, {0x0898, 0x089F, 1}, {0x08CA, 0x08D3, 1}, {0x09FE, 0x09FE, 1},
		{0x0C3C, 0x0C3C, 1}, {0x0D3B, 0x0D3C, 1}, {0x0EBA, 0x0EBA, 1}, {0x1715, 0x1715, 1}, {0x1ABF, 0x1ACE, 1},
		{0x1DF6, 0x1DFA, 1}, {0x32FF, 0x32FF, 1}, {0xA7F2, 0xA7F4, 1}, {0xA82C, 0xA82C, 1}, {0xAB69, 0xAB69, 1}},
	R32: []unicode.Range32{{0x10781, 0x10785, 1}, {0x10787, 0x107B0, 1}, {0x107B2, 0x107BA, 1},
		{0x10D24, 0x10D27, 1}, {0x10EAB, 0x10EAC, 1}, {0x10EFD, 0x10EFF, 1}, {0x10F46, 0x10F50, 1},
		{0x10F82, 0x10F85, 1}, {0x11070, 0x11070, 1}, {0x1133B, 0x1133B, 1}, {0x1145E, 0x1145E, 1},
		{0x11839, 0x1183A, 1}, {0x11930, 0x11930, 1}, {0x11938, 0x11938, 1}, {0x1193D, 0x1193E, 1},
		{0x11943, 0x11943, 1}, {0x119E0, 0x119E0, 1}, {0x11A34, 0x11A34, 1}, {0x11A47, 0x11A47, 1},
		{0x11A99, 0x11A99, 1}, {0x11D42, 0x11D42, 1}, {0x11D44, 0x11D45, 1}, {0x11D97, 0x11D97, 1},
		{0x11F41, 0x11F42, 1}, {0x16FF0, 0x16FF1, 1}, {0x1E030, 0x1E06D, 1}, {0x1E08F, 0x1E08F, 1},
		{0x1E130, 0x1E136, 1}, {0x1E2AE, 0x1E2AE, 1}, {0x1E2EC, 0x1E2EF, 1}, {0x1E4EC, 0x1E4EF, 1},
		{0x1F16C, 0x1F16C, 1}, {0x1FBF0, 0x1FBF9, 1}},
}

// nextUnknown returns the byte offset and width of the first character of s in unknownToReference, or -1.
func nextUnknown(s string) (int, int) {
	for i := 0; i < len(s); i++ {
		if s[i] < 0xDF { // ASCII, continuation bytes and characters below U+07C0
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if unicode.Is(unknownToReference, r) {
			return i, w
		}
		i += w - 1
	}
	return -1, 0
}

// normalize applies one form as the reference does.
func normalize(f norm.Form, s string) string {
	i, w := nextUnknown(s)
	if i < 0 {
		if f.IsNormalString(s) {
			return s
		}
		return f.String(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(f.String(s[:i]))
		b.WriteString(s[i : i+w])
		s = s[i+w:]
		i, w = nextUnknown(s)
	}
	b.WriteString(f.String(s))
	return b.String()
}
