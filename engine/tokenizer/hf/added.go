package hf

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens: a string that is cut out of the text and
// becomes one token before any normalization or pre-tokenization, when EncodeSpecial is asked to.
type addedToken struct {
	id         int
	content    string
	singleWord bool // only where no word character touches it on either side
	lstrip     bool // takes the whitespace on its left
	rstrip     bool // takes the whitespace on its right
	normalized bool // matched in the normalized text, by its normalized content
	special    bool
}

// part is a stretch of text, or an added token (id ≥ 0) with the text it was matched on.
type part struct {
	s  string
	id int
}

// addedMatcher finds added tokens, leftmost-longest like the Aho-Corasick automaton of the Hugging Face
// implementation: at the first position where any token matches, the longest one.
type addedMatcher struct {
	first [256]bool // bytes that start some token, to skip quickly over plain text
	nodes []trieNode
}

type trieNode struct {
	next  map[byte]int32
	token *addedToken
}

func newAddedMatcher(tokens []*addedToken, pattern func(*addedToken) string) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{}}}
	for _, t := range tokens {
		p := pattern(t)
		if p == "" {
			continue
		}
		m.first[p[0]] = true
		n := int32(0)
		for i := 0; i < len(p); i++ {
			if m.nodes[n].next == nil {
				m.nodes[n].next = map[byte]int32{}
			}
			c, ok := m.nodes[n].next[p[i]]
			if !ok {
				c = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{})
				m.nodes[n].next[p[i]] = c
			}
			n = c
		}
		m.nodes[n].token = t
	}
	return m
}

// next returns the leftmost-longest match at or after pos.
func (m *addedMatcher) next(s string, pos int) (start, end int, tok *addedToken) {
	for i := pos; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		n := int32(0)
		for j := i; j < len(s); j++ {
			c, ok := m.nodes[n].next[s[j]]
			if !ok {
				break
			}
			n = c
			if t := m.nodes[n].token; t != nil {
				end, tok = j+1, t
			}
		}
		if tok != nil {
			return i, end, tok
		}
	}
	return 0, 0, nil
}

// split appends the parts of s to dst: the added tokens found (honouring single_word, lstrip and rstrip as
// AddedVocabulary::find_matches does) and the text between them.
func (m *addedMatcher) split(s string, dst []part) []part {
	if m == nil {
		return append(dst, part{s, -1})
	}
	startOffset := 0
	for pos := 0; pos < len(s); {
		start, stop, tok := m.next(s, pos)
		if tok == nil {
			break
		}
		pos = stop
		// A match inside whitespace that the previous token's rstrip already took: the reference would
		// emit overlapping text here; skipping the match keeps every byte exactly once.
		if start < startOffset {
			continue
		}
		if tok.singleWord && (start > 0 && endsWithWord(s[:start]) || stop < len(s) && startsWithWord(s[stop:])) {
			continue
		}
		if tok.lstrip {
			start = max(trimRightSpace(s[:start]), startOffset)
		}
		if tok.rstrip {
			stop = len(s) - len(trimLeftSpace(s[stop:]))
		}
		if startOffset < start {
			dst = append(dst, part{s[startOffset:start], -1})
		}
		dst = append(dst, part{s[start:stop], tok.id})
		startOffset = stop
	}
	if startOffset < len(s) {
		dst = append(dst, part{s[startOffset:], -1})
	}
	return dst
}

// isWord is the Unicode \w of Rust's regex crate, which the reference uses for single_word: alphabetic,
// marks, decimal digits, connector punctuation and the joiners.
func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Nl, r) ||
		unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Other_Alphabetic, r) || r == 0x200C || r == 0x200D
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWord(r)
}

func startsWithWord(s string) bool {
	r, _ := runeAt(s, 0)
	return r >= 0 && isWord(r)
}

// trimRightSpace returns the length of s without its trailing whitespace.
func trimRightSpace(s string) int {
	for len(s) > 0 {
		r, w := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-w]
	}
	return len(s)
}

func trimLeftSpace(s string) string {
	for len(s) > 0 {
		r, w := runeAt(s, 0)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[w:]
	}
	return s
}
