package hf

import "strings"

// span is a byte range [start, end) of a string.
type span struct{ start, end int }

// matcher finds the non-overlapping matches of a pattern in s, in order, and appends them to dst.
type matcher interface {
	find(s string, dst []span) []span
}

// behavior is what a split does with the matches: the SplitDelimiterBehavior of tokenizer.json.
type behavior int

const (
	isolated           behavior = iota // matches and the text between them are pieces of their own
	removed                            // matches are dropped
	mergedWithPrevious                 // a match joins the piece before it
	mergedWithNext                     // a match joins the piece after it
	contiguous                         // adjacent matches form one piece, as does the text between them
)

var behaviors = map[string]behavior{"Isolated": isolated, "Removed": removed,
	"MergedWithPrevious": mergedWithPrevious, "MergedWithNext": mergedWithNext, "Contiguous": contiguous}

// splitStep is one splitting pre-tokenizer: Split (a regex or a literal) or Digits (a character class).
type splitStep struct {
	m        matcher
	behavior behavior
	invert   bool
}

// segment is a span flagged as a match or as text between matches.
type segment struct {
	span
	match bool
}

// split appends the pieces of s to dst (substrings of s, never empty), following the Hugging Face rules for
// each behaviour; buf is scratch space. It reports whether the first piece appended starts where s does
// (at0 is for Metaspace's prepend_scheme "first", which splitting does not use).
func (st *splitStep) split(s string, dst []string, buf *scratch, _ bool) ([]string, bool) {
	if s == "" {
		return dst, false
	}
	buf.spans = st.m.find(s, buf.spans[:0])
	segs := buf.segs[:0]
	prev := 0
	for _, m := range buf.spans {
		if prev != m.start {
			segs = append(segs, segment{span{prev, m.start}, st.invert})
		}
		segs = append(segs, segment{m, !st.invert})
		prev = m.end
	}
	if prev != len(s) {
		segs = append(segs, segment{span{prev, len(s)}, st.invert})
	}
	buf.segs = segs
	switch st.behavior {
	case isolated:
	case removed:
		out := segs[:0]
		for _, g := range segs {
			if !g.match {
				out = append(out, g)
			}
		}
		segs = out
	case contiguous, mergedWithPrevious:
		out := segs[:0]
		prevMatch := false
		for _, g := range segs {
			join := g.match == prevMatch
			if st.behavior == mergedWithPrevious {
				join = g.match && !prevMatch
			}
			if join && len(out) > 0 {
				out[len(out)-1].end = g.end
			} else {
				out = append(out, g)
			}
			prevMatch = g.match
		}
		segs = out
	case mergedWithNext:
		// The mirror image of mergedWithPrevious: walk from the end, a match joins the piece after it.
		w := len(segs)
		prevMatch := false
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			if g.match && !prevMatch && w < len(segs) {
				segs[w].start = g.start
			} else {
				w--
				segs[w] = g
			}
			prevMatch = g.match
		}
		segs = segs[w:]
	}
	first := len(dst)
	atStart := false
	for _, g := range segs {
		if g.end > g.start {
			if len(dst) == first {
				atStart = g.start == 0
			}
			dst = append(dst, s[g.start:g.end])
		}
	}
	return dst, atStart
}

// scratch is the reusable working memory of one encode.
type scratch struct {
	spans  []span
	segs   []segment
	pieces [2][]string
	parts  []part
	sub    []part
	words  []string
}

// byteLevel is the ByteLevel pre-tokenizer, always the last step: it may prefix a space and split with
// GPT-2's regex; the byte-to-character mapping it also does is implicit here, pieces stay raw bytes.
type byteLevel struct {
	addPrefixSpace bool
	useRegex       bool
}

// preTokenizer is the whole pre-tokenization: splitting steps, then ByteLevel for a byte-level tokenizer.
type preTokenizer struct {
	steps     []pieceSplitter
	bl        byteLevel
	byteLevel bool // ends with ByteLevel: pieces are raw bytes for a byte-level model
	metaspace bool // has a Metaspace step
}

// pieceSplitter is one pre-tokenizer step: it appends the pieces of s to dst and reports whether the first
// one starts at s's start; at0 says whether s starts the input text.
type pieceSplitter interface {
	split(s string, dst []string, buf *scratch, at0 bool) ([]string, bool)
}

var gpt2Scanner, _ = scannerFor(patternGPT2)

// pieces appends the pre-tokenized pieces of s to dst; at0 says whether s starts the text being encoded
// (the reference's offset 0, which Metaspace's prepend_scheme "first" looks at). A piece may be a new
// string (with a prefixed space or "▁"), otherwise it is a substring of s.
func (p *preTokenizer) pieces(s string, at0 bool, dst []string, buf *scratch) []string {
	cur := append(buf.pieces[0][:0], s)
	next := buf.pieces[1][:0]
	for _, st := range p.steps {
		next = next[:0]
		first0 := false
		for i, piece := range cur {
			n := len(next)
			var z bool
			next, z = st.split(piece, next, buf, i == 0 && at0)
			if n == 0 && len(next) > 0 {
				first0 = i == 0 && at0 && z
			}
		}
		cur, next = next, cur
		at0 = first0
	}
	buf.pieces[0], buf.pieces[1] = cur, next
	if !p.byteLevel {
		for _, piece := range cur {
			if piece != "" {
				dst = append(dst, piece)
			}
		}
		return dst
	}
	for _, piece := range cur {
		if piece == "" {
			continue
		}
		if p.bl.addPrefixSpace && piece[0] != ' ' {
			piece = " " + piece
		}
		if !p.bl.useRegex {
			dst = append(dst, piece)
			continue
		}
		buf.spans = gpt2Scanner.find(piece, buf.spans[:0])
		for _, m := range buf.spans {
			dst = append(dst, piece[m.start:m.end])
		}
	}
	return dst
}

// digitMatcher matches every numeric character on its own (Digits pre-tokenizer; with contiguous
// behaviour runs of them form one piece).
type digitMatcher struct{}

func (digitMatcher) find(s string, dst []span) []span {
	for i := 0; i < len(s); {
		r, w := runeAt(s, i)
		if isNumeric(r) {
			dst = append(dst, span{i, i + w})
		}
		i += w
	}
	return dst
}

// literalMatcher matches a fixed string (a Split pattern given as {"String": ...}).
type literalMatcher string

func (l literalMatcher) find(s string, dst []span) []span {
	for i := 0; ; {
		k := strings.Index(s[i:], string(l))
		if k < 0 {
			return dst
		}
		dst = append(dst, span{i + k, i + k + len(l)})
		i += k + len(l)
	}
}
