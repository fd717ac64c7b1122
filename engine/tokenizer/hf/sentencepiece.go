package hf

import (
	"strings"
	"unicode/utf8"
)

// This file holds what SentencePiece-style BPE tokenizers (Gemma, Llama 2, Mistral) add to the byte-level
// ones: the Metaspace pre-tokenizer, the model's character symbols with byte fallback, and the decoder chain
// that turns "▁" back into spaces and "<0xNN>" tokens into bytes.

// metaspaceStep is the Metaspace pre-tokenizer: spaces become the replacement character ("▁"), which is
// also put in front of the text as prepend_scheme says, and with split the text is cut before each
// replacement character (each piece then starts with it).
type metaspaceStep struct{ metaspace }

func (m *metaspaceStep) split(s string, dst []string, buf *scratch, at0 bool) ([]string, bool) {
	if s == "" {
		return dst, false
	}
	rep := string(m.replacement)
	s = strings.ReplaceAll(s, " ", rep)
	// The reference prepends only when the text does not already start with the character; "first" means
	// the piece that starts the input (offset 0), not one after an added token.
	if (m.prepend == prependAlways || m.prepend == prependFirst && at0) && !strings.HasPrefix(s, rep) {
		s = rep + s
	}
	if !m.splitWords {
		return append(dst, s), true
	}
	st := splitStep{m: literalMatcher(rep), behavior: mergedWithNext}
	return st.split(s, dst, buf, false)
}

// decoder is tokenizer.json's decoder. Decoding is the concatenation of every token's bytes (TokenBytes),
// computed once at load by the per-token steps, except that the first token may decode differently (the
// Metaspace decoder drops its replacement characters instead of writing spaces) and the steps after Fuse
// apply to the whole text (Llama 2's Strip removes one leading space).
type decoder struct {
	byteLevel    bool        // the ByteLevel decoder: GPT-2's byte alphabet back to bytes
	perToken     []tokenStep // Replace, Strip, Metaspace on each token, in order
	byteFallback bool        // then "<0xNN>" tokens are the byte NN
	whole        []textStep  // after Fuse: Replace and Strip on the whole text
	firstDiffers bool        // a Metaspace step treats the first token differently
}

// tokenStep is a decoder step applied to each token's text; first says whether it is the first token.
type tokenStep interface {
	token(s string, first bool) string
}

// textStep is a decoder step applied to the whole text once the tokens are fused.
type textStep interface{ apply(s string) string }

func (r *replacer) token(s string, _ bool) string { return r.apply(s) }

// stripStep is the Strip decoder: up to start leading and stop trailing content characters removed.
type stripStep struct {
	content     rune
	start, stop int
}

func (st stripStep) token(s string, _ bool) string { return st.apply(s) }

// apply removes the characters as the reference does. On text that is all content characters the
// reference's start and stop cuts overlap (and Rust would panic); here the text becomes empty.
func (st stripStep) apply(s string) string {
	lo, hi := 0, len(s)
	for i := 0; i < st.start && lo < hi; i++ {
		r, w := utf8.DecodeRuneInString(s[lo:])
		if r != st.content || r == utf8.RuneError && w == 1 {
			break
		}
		lo += w
	}
	for i := 0; i < st.stop && hi > lo; i++ {
		r, w := utf8.DecodeLastRuneInString(s[lo:hi])
		if r != st.content || r == utf8.RuneError && w == 1 {
			break
		}
		hi -= w
	}
	return s[lo:hi]
}

// metaspaceDecoder is the Metaspace decoder: replacement characters become spaces, except in the first
// token, where the reference drops them (they are the prefix the pre-tokenizer added) unless the scheme is
// "never".
type metaspaceDecoder struct{ metaspace }

func (m metaspaceDecoder) token(s string, first bool) string {
	if !strings.ContainsRune(s, m.replacement) {
		return s
	}
	if first && m.prepend != prependNever {
		return strings.ReplaceAll(s, string(m.replacement), "")
	}
	return strings.ReplaceAll(s, string(m.replacement), " ")
}

// appendToken appends the decoded bytes of one token, given as it is spelled in tokenizer.json.
func (d *decoder) appendToken(dst []byte, tok string, first bool) []byte {
	if d.byteLevel {
		return appendSpelled(dst, tok)
	}
	if len(d.perToken) == 1 {
		// Gemma's and Llama 2's one step, "▁" → " ", written straight into dst: building every token's
		// string first was most of the allocations of a load.
		if r, ok := d.perToken[0].(*replacer); ok && r.m == nil {
			n := len(dst)
			for {
				k := strings.Index(tok, r.literal)
				if k < 0 {
					break
				}
				dst = append(append(dst, tok[:k]...), r.content...)
				tok = tok[k+len(r.literal):]
			}
			dst = append(dst, tok...)
			if d.byteFallback && len(dst)-n == 6 {
				if b, ok := byteToken(string(dst[n:])); ok {
					return append(dst[:n], b)
				}
			}
			return dst
		}
	}
	for _, st := range d.perToken {
		tok = st.token(tok, first)
	}
	if d.byteFallback {
		if b, ok := byteToken(tok); ok {
			return append(dst, b)
		}
	}
	return append(dst, tok...)
}

// byteToken reads a byte-fallback token, "<0xNN>" with two hexadecimal digits.
func byteToken(tok string) (byte, bool) {
	if len(tok) != 6 || tok[:3] != "<0x" || tok[5] != '>' {
		return 0, false
	}
	hi, ok1 := unhex(tok[3])
	lo, ok2 := unhex(tok[4])
	return hi<<4 | lo, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// byteTokenName is how the vocabulary spells the byte-fallback token of b (the reference's
// format!("<{:#04X}>", b)).
func byteTokenName(b byte) string {
	const digits = "0123456789ABCDEF"
	return "<0x" + string([]byte{digits[b>>4], digits[b&15]}) + ">"
}

// charSymbols appends the starting symbols of a piece for a SentencePiece-style model: each character's
// token; for a character the vocabulary lacks, its UTF-8 bytes as byte-fallback tokens or, without byte
// fallback, the unknown token (one for a run of them with fuse_unk). A byte that is not valid UTF-8 (the
// reference never sees one: its input is a Rust string) is treated as a character the vocabulary lacks,
// so it round-trips through its byte token.
func (m *bpe) charSymbols(piece string, ids []int32) []int32 {
	prevUnk := false
	for i := 0; i < len(piece); {
		id, w := m.charAt(piece, i)
		switch {
		case id >= 0:
			ids = append(ids, id)
			prevUnk = false
		case m.byteFallback:
			for k := i; k < i+w; k++ {
				ids = append(ids, m.byteTok[piece[k]])
			}
		case !(m.fuseUnk && prevUnk):
			ids = append(ids, m.unk)
			prevUnk = true
		}
		i += w
	}
	return ids
}

// charAt returns the token of the character at piece[i] (-1 when the vocabulary has none, or the byte is
// not valid UTF-8) and the character's width in bytes.
func (m *bpe) charAt(piece string, i int) (int32, int) {
	if c := piece[i]; c < utf8.RuneSelf {
		return m.asciiID[c], 1
	}
	r, w := utf8.DecodeRuneInString(piece[i:])
	if r == utf8.RuneError && w == 1 {
		return -1, 1
	}
	if id, ok := m.charID[r]; ok {
		return id, w
	}
	return -1, w
}

// appendWords appends the ids of a SentencePiece-style piece. Without a pre-tokenizer that splits on
// spaces (Gemma's and Llama 2's never do: their spaces are "▁" by then), a whole text is one piece, which
// would defeat the word cache and merge in one long run. It is cut into words before each "▁" that follows
// another character, where no merge can ever join the two sides: that needs a token holding the character
// before the cut followed by "▁", and buildModel lists the characters some token has there (Gemma has one
// such token, ">▁</"; Llama 2 none). Merges on one side of a cut never depend on the other side, so
// merging the words apart gives exactly the reference's result. With ignore_merges a whole piece that is a
// token would be taken as is, so pieces are not cut then.
func (m *bpe) appendWords(dst []int, piece string) []int {
	if !m.cutWords {
		return m.appendWord(dst, piece)
	}
	start := 0
	last := rune(-1) // the last character of the previous symbol's token text
	for i := 0; i < len(piece); {
		id, w := m.charAt(piece, i)
		var r rune
		switch {
		case w == 3 && piece[i:i+3] == "▁":
			r = '▁'
		case id >= 0 && w == 1:
			r = rune(piece[i])
		case id >= 0:
			r, _ = utf8.DecodeRuneInString(piece[i:])
		default:
			r = m.fallbackLast
		}
		if r == '▁' && i > start && last != '▁' && !m.crossesMeta[last] {
			dst = m.appendWord(dst, piece[start:i])
			start = i
		}
		last = r
		i += w
	}
	return m.appendWord(dst, piece[start:])
}
