package hf

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/trainyard/trainyard/engine/tokenizer"
)

// Tokenizer is a Hugging Face BPE tokenizer, byte-level or SentencePiece-style. It is immutable after
// loading and safe for concurrent use.
type Tokenizer struct {
	norm    normalizer
	pre     *preTokenizer
	model   *bpe
	dec     *decoder
	text    []string               // the tokens as spelled in tokenizer.json, kept when the first token decodes differently
	added   map[string]*addedToken // by content
	addedID map[int]*addedToken
	rawSet  *addedMatcher // added tokens matched in the text as given (normalized: false)
	normSet *addedMatcher // added tokens matched after normalization (normalized: true)
	tokens  [][]byte      // the bytes of every id, nil for ids no token has
	spelled map[string]int
	cfg     config
	pool    sync.Pool // *scratch
}

// VocabSize returns the number of token ids: one more than the highest id of the vocabulary and the added
// tokens. A model's embedding matrix may have more rows (padding to a multiple of 64 or 128 is common).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Encode returns the ids of text as plain text: added tokens are not recognised, so "<|im_start|>" typed by a
// user is tokenized as the characters it is made of and can never forge a chat-turn marker. The text is
// normalized first when the tokenizer says so (Qwen: NFC).
func (t *Tokenizer) Encode(text string) []int {
	buf := t.scratch()
	ids := t.encodeText(t.norm.apply(text), true, make([]int, 0, len(text)/3+1), buf)
	t.pool.Put(buf)
	return ids
}

// EncodeSpecial returns the ids of text with added tokens cut out first, as Hugging Face's
// encode(text, add_special_tokens=False) does: the right call for a rendered chat template. Nothing is
// added at either end (no BOS).
func (t *Tokenizer) EncodeSpecial(text string) []int {
	buf := t.scratch()
	ids := make([]int, 0, len(text)/3+1)
	parts := t.rawSet.split(text, buf.parts[:0])
	sub := buf.sub[:0]
	for i, p := range parts {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		s := t.norm.apply(p.s)
		if t.normSet == nil {
			ids = t.encodeText(s, i == 0, ids, buf)
			continue
		}
		sub = t.normSet.split(s, sub[:0])
		for j, q := range sub {
			if q.id >= 0 {
				ids = append(ids, q.id)
			} else {
				ids = t.encodeText(q.s, i == 0 && j == 0, ids, buf)
			}
		}
	}
	buf.parts, buf.sub = parts, sub
	t.pool.Put(buf)
	return ids
}

// encodeText pre-tokenizes normalized text and runs the BPE model on every piece; at0 says whether the
// text starts the input (not after an added token).
func (t *Tokenizer) encodeText(s string, at0 bool, ids []int, buf *scratch) []int {
	buf.words = t.pre.pieces(s, at0, buf.words[:0], buf)
	for _, w := range buf.words {
		ids = t.model.appendPiece(ids, w)
	}
	return ids
}

func (t *Tokenizer) scratch() *scratch {
	if b, ok := t.pool.Get().(*scratch); ok {
		return b
	}
	return &scratch{}
}

// Decode returns the text of ids, added tokens written as their content. The result holds the exact bytes
// of the tokens, so Decode(Encode(s)) == s for every string s (for normalizing tokenizers: every s already
// in that normal form), and a sequence cut inside a multi-byte character, or byte-fallback tokens that do
// not form one, give invalid UTF-8 rather than U+FFFD as the reference's lossy conversion would. Ids that
// name no token are skipped.
//
// Decode is the concatenation of the tokens' TokenBytes, except where the decoder treats the text as a
// whole: Llama 2's Strip step drops one leading space (the "▁" its normalizer put in front), and a Metaspace
// decoder drops the "▁" of the first token instead of writing a space.
func (t *Tokenizer) Decode(ids []int) string {
	var b strings.Builder
	first := true
	for _, id := range ids {
		tok := t.TokenBytes(id)
		if tok == nil {
			continue
		}
		if first && t.text != nil {
			tok = t.dec.appendToken(nil, t.tokenText(id), true)
		}
		first = false
		b.Write(tok)
	}
	s := b.String()
	for _, st := range t.dec.whole {
		s = st.apply(s)
	}
	return s
}

// tokenText returns a token as tokenizer.json spells it (an added token: its content, normalized when it
// is matched normalized, as addTokens decodes it).
func (t *Tokenizer) tokenText(id int) string {
	if a := t.addedID[id]; a != nil {
		if a.normalized {
			return t.norm.apply(a.content)
		}
		return a.content
	}
	return t.text[id]
}

// TokenBytes returns the raw bytes of one token, which may be part of a UTF-8 sequence (streaming has to
// hold such bytes back until the character is complete; a byte-fallback token is a single byte). For a
// SentencePiece-style tokenizer they are the token with "▁" written as a space, as a token decodes after
// the first one. It returns nil for an id that names no token. The slice must not be modified.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.tokens) {
		return nil
	}
	return t.tokens[id]
}

// IsSpecial reports whether id is an added token marked special (chat-turn markers, end of text), as
// opposed to ordinary tokens and non-special added tokens such as Qwen3's "<think>".
func (t *Tokenizer) IsSpecial(id int) bool {
	a := t.addedID[id]
	return a != nil && a.special
}

// IsAdded reports whether id is an added token, special or not.
func (t *Tokenizer) IsAdded(id int) bool { return t.addedID[id] != nil }

// TokenID returns the id of a token given as text: an added token's content ("<|im_end|>"), or else a
// vocabulary entry in the file's byte-level spelling ("Ġhello"), like the reference's token_to_id.
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if a, ok := t.added[token]; ok {
		return a.id, true
	}
	id, ok := t.spelled[token]
	return id, ok
}

// AddedTokens returns the contents of the added tokens in id order.
func (t *Tokenizer) AddedTokens() []string {
	ids := make([]int, 0, len(t.addedID))
	for id := range t.addedID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.addedID[id].content
	}
	return out
}

// addTokens registers the added tokens, checks that their ids are the ones the reference would give them,
// and builds the id → bytes table.
func (t *Tokenizer) addTokens(list []addedJSON, vocab map[string]int) error {
	t.added = map[string]*addedToken{}
	t.addedID = map[int]*addedToken{}
	t.spelled = vocab
	size := 0
	for _, id := range vocab {
		size = max(size, id+1)
	}
	next := len(vocab) // the reference numbers new tokens from the vocabulary's size on
	var raw, normed []*addedToken
	for i, a := range list {
		field := func() string { return fmt.Sprintf("[%d]", i) }
		if a.Content == "" {
			continue
		}
		if _, dup := t.added[a.Content]; dup {
			return errAt(field()+".content", fmt.Errorf("%q is added twice", a.Content))
		}
		want, inVocab := vocab[a.Content]
		if !inVocab {
			want, next = next, next+1
		}
		if a.ID != want {
			return errAt(field()+".id", fmt.Errorf("%q has id %d but the reference would give it %d", a.Content, a.ID, want))
		}
		tok := &addedToken{id: a.ID, content: a.Content, singleWord: a.SingleWord, lstrip: a.LStrip,
			rstrip: a.RStrip, normalized: a.Normalized, special: a.Special}
		t.added[a.Content] = tok
		t.addedID[a.ID] = tok
		size = max(size, a.ID+1)
		if a.Normalized {
			normed = append(normed, tok)
		} else {
			raw = append(raw, tok)
		}
	}
	if len(raw) > 0 {
		t.rawSet = newAddedMatcher(raw, func(a *addedToken) string { return a.content })
	}
	if len(normed) > 0 {
		t.normSet = newAddedMatcher(normed, func(a *addedToken) string { return t.norm.apply(a.content) })
	}
	t.tokens = append(t.model.tokens, make([][]byte, max(0, size-len(t.model.tokens)))...)
	for _, a := range t.added {
		// A normalized token decodes as its normalized form, the text it was matched on.
		content := a.content
		if a.normalized {
			content = t.norm.apply(content)
		}
		t.tokens[a.id] = t.dec.appendToken(nil, content, false)
	}
	return nil
}

var _ tokenizer.Codec = (*Tokenizer)(nil)
