package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unicode/utf8"
)

// Load reads dir/tokenizer.json and, when present, dir/tokenizer_config.json (the special tokens and chat
// template), as found in a Hugging Face model directory.
func Load(dir string) (*Tokenizer, error) {
	tokPath := filepath.Join(dir, "tokenizer.json")
	tok, err := os.ReadFile(tokPath)
	if err != nil {
		return nil, &LoadError{File: tokPath, Err: err}
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfg, err := os.ReadFile(cfgPath)
	if errors.Is(err, os.ErrNotExist) {
		cfg, err = nil, nil
	}
	if err != nil {
		return nil, &LoadError{File: cfgPath, Err: err}
	}
	return newTokenizer(tok, cfg, tokPath, cfgPath)
}

// New builds a tokenizer from the contents of tokenizer.json and tokenizer_config.json (config may be nil).
func New(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	return newTokenizer(tokenizerJSON, configJSON, "tokenizer.json", "tokenizer_config.json")
}

// fileJSON is the part of tokenizer.json this package reads. truncation and padding are not read: they only
// apply when the caller asks for them, as transformers does. post_processor is not read either: it adds
// special tokens (a BOS) only when encoding with add_special_tokens, which this package does not offer
// (chat templates write their BOS themselves).
type fileJSON struct {
	AddedTokens  []addedJSON     `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        modelJSON       `json:"model"`
}

type addedJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	ByteFallback            bool            `json:"byte_fallback"`
	FuseUnk                 bool            `json:"fuse_unk"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// readFileJSON decodes tokenizer.json: the small fields with encoding/json, the vocabulary and the merges
// as raw values for parseVocab and parseMerges, which check them as they read them. (encoding/json would
// first scan all 33 MB of Gemma's file twice, which took a third of the load.)
func readFileJSON(data []byte) (*fileJSON, error) {
	f := &fileJSON{}
	s := &jsonScan{b: data}
	err := s.object(func(k string) error {
		if k == "model" {
			return readModelJSON(s, &f.Model)
		}
		raw, err := s.rawValue()
		if err != nil {
			return err
		}
		switch k {
		case "added_tokens":
			return json.Unmarshal(raw, &f.AddedTokens)
		case "normalizer":
			f.Normalizer = raw
		case "pre_tokenizer":
			f.PreTokenizer = raw
		case "decoder":
			f.Decoder = raw
		default:
			if !json.Valid(raw) {
				return errors.New("not valid JSON")
			}
		}
		return nil
	})
	if err == nil && s.peek() != 0 {
		err = fmt.Errorf("offset %d: data after the object", s.i)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// readModelJSON reads the model object at the scanner.
func readModelJSON(s *jsonScan, mj *modelJSON) error {
	small := map[string]any{"type": &mj.Type, "dropout": &mj.Dropout, "unk_token": &mj.UnkToken,
		"continuing_subword_prefix": &mj.ContinuingSubwordPrefix, "end_of_word_suffix": &mj.EndOfWordSuffix,
		"byte_fallback": &mj.ByteFallback, "fuse_unk": &mj.FuseUnk, "ignore_merges": &mj.IgnoreMerges}
	return s.object(func(k string) error {
		raw, err := s.rawValue()
		if err != nil {
			return err
		}
		switch k {
		case "vocab":
			mj.Vocab = raw
		case "merges":
			mj.Merges = raw
		default:
			dst, ok := small[k]
			if !ok {
				dst = &json.RawMessage{}
			}
			return json.Unmarshal(raw, dst)
		}
		return nil
	})
}

func newTokenizer(tokJSON, cfgJSON []byte, tokFile, cfgFile string) (*Tokenizer, error) {
	fail := func(field string, err error) (*Tokenizer, error) {
		var fe *fieldError
		if errors.As(err, &fe) {
			field, err = joinPath(field, fe.path), fe.err
		}
		return nil, &LoadError{File: tokFile, Field: field, Err: err}
	}
	f, err := readFileJSON(tokJSON)
	if err != nil {
		return fail("", err)
	}
	t := &Tokenizer{}
	o, err := parseObject(f.Normalizer)
	if err == nil {
		t.norm, err = parseNormalizer(o)
	}
	if err != nil {
		return fail("normalizer", err)
	}
	if o, err = parseObject(f.PreTokenizer); err == nil {
		t.pre, err = parsePreTokenizer(o)
	}
	if err != nil {
		return fail("pre_tokenizer", err)
	}
	if o, err = parseObject(f.Decoder); err == nil {
		t.dec, err = parseDecoder(o, t.pre.byteLevel)
	}
	if err != nil {
		return fail("decoder", err)
	}
	var vocab map[string]int
	var byID []string
	if t.model, vocab, byID, err = buildModel(&f.Model, t.dec); err != nil {
		return fail("model", err)
	}
	if t.dec.firstDiffers {
		t.text = byID
	}
	if err := t.addTokens(f.AddedTokens, vocab); err != nil {
		return fail("added_tokens", err)
	}
	if err := t.readConfig(cfgJSON, cfgFile); err != nil {
		return nil, err
	}
	return t, nil
}

func joinPath(a, b string) string {
	if a == "" || strings.HasPrefix(b, "[") {
		return a + b
	}
	return a + "." + b
}

// buildModel checks the BPE options and indexes the vocabulary and merges by ids (for a byte-level model,
// by raw bytes too); it also returns the vocabulary as spelled in the file, and the tokens by id.
func buildModel(mj *modelJSON, dec *decoder) (*bpe, map[string]int, []string, error) {
	switch {
	case mj.Type != "" && mj.Type != "BPE":
		return nil, nil, nil, errAt("type", unsupported("model %q (supported: BPE)", mj.Type))
	case mj.Dropout != nil && *mj.Dropout != 0:
		return nil, nil, nil, errAt("dropout", unsupported("BPE dropout makes encoding random"))
	case mj.ByteFallback && dec.byteLevel:
		return nil, nil, nil, errAt("byte_fallback", unsupported("byte fallback with a ByteLevel pre-tokenizer"))
	case mj.ContinuingSubwordPrefix != nil && *mj.ContinuingSubwordPrefix != "":
		return nil, nil, nil, errAt("continuing_subword_prefix", unsupported("%q", *mj.ContinuingSubwordPrefix))
	case mj.EndOfWordSuffix != nil && *mj.EndOfWordSuffix != "":
		return nil, nil, nil, errAt("end_of_word_suffix", unsupported("%q", *mj.EndOfWordSuffix))
	}
	vocab, err := parseVocab(mj.Vocab)
	if err == nil && len(vocab) == 0 {
		err = errors.New("empty")
	}
	if err != nil {
		return nil, nil, nil, errAt("vocab", err)
	}
	m := &bpe{ignoreMerges: mj.IgnoreMerges, cache: newWordCache(), chars: !dec.byteLevel}
	// The bytes of every token, in id order, in one block: the model's raw keys and the tokenizer's id →
	// bytes table point into it instead of holding 150,000 small allocations each.
	size := 0
	for tok, id := range vocab {
		if id < 0 || id > 1<<30 {
			return nil, nil, nil, errAt("vocab", fmt.Errorf("token %q has id %d", tok, id))
		}
		size = max(size, id+1)
	}
	byID := make([]string, size)
	for tok, id := range vocab {
		byID[id] = tok
	}
	arena := make([]byte, 0, len(mj.Vocab)/2)
	offs := make([]int32, size+1)
	for id, tok := range byID {
		arena = dec.appendToken(arena, tok, false)
		offs[id+1] = int32(len(arena))
	}
	m.tokens = make([][]byte, size)
	for id := range byID {
		a, b := offs[id], offs[id+1]
		m.tokens[id] = arena[a:b:b]
	}
	if m.chars {
		if err := m.indexChars(mj, vocab); err != nil {
			return nil, nil, nil, err
		}
	} else {
		m.raw = make(map[string]int32, len(vocab))
		text := string(arena)
		for id, tok := range byID {
			if tok != "" && spellOnly(tok) {
				m.raw[text[offs[id]:offs[id+1]]] = int32(id)
			}
		}
		for b := 0; b < 256; b++ {
			id, ok := vocab[byteSpell[b]]
			if !ok {
				return nil, nil, nil, errAt("vocab", unsupported("no token for byte 0x%02X (%q): not a byte-level vocabulary", b, byteSpell[b]))
			}
			m.byteID[b] = int32(id)
		}
	}
	r := mergeResolver{vocab: vocab}
	err = parseMerges(mj.Merges, r.add)
	if err == nil {
		err = r.flush()
	}
	if err != nil {
		return nil, nil, nil, errAt("merges", err)
	}
	m.merges = newMergeTable(r.entries)
	return m, vocab, byID, nil
}

// mergeResolver turns the merges into entries of the merge table. Looking up each pair's two tokens and
// their concatenation in the vocabulary is most of a load (three random accesses into a map of 262,144
// strings for each of Gemma's 514,906 merges), so the pairs are resolved a batch at a time on up to two
// cores; the entries keep file order and rank.
type mergeResolver struct {
	vocab   map[string]int
	pairs   [][2][]byte
	ids     [][3]int32
	entries []mergeEntry
}

const mergeBatch = 1 << 15

func (r *mergeResolver) add(a, b []byte) error {
	r.pairs = append(r.pairs, [2][]byte{a, b})
	if len(r.pairs) == mergeBatch {
		return r.flush()
	}
	return nil
}

// flush resolves and enters the pending pairs.
func (r *mergeResolver) flush() error {
	n := len(r.pairs)
	if cap(r.ids) < n {
		r.ids = make([][3]int32, mergeBatch)
	}
	ids := r.ids[:n]
	resolve := func(lo, hi int) int {
		var joined []byte
		for i := lo; i < hi; i++ {
			p := r.pairs[i]
			joined = append(append(joined[:0], p[0]...), p[1]...)
			a, okA := r.vocab[string(p[0])]
			b, okB := r.vocab[string(p[1])]
			c, okC := r.vocab[string(joined)]
			if !okA || !okB || !okC {
				return i
			}
			ids[i] = [3]int32{int32(a), int32(b), int32(c)}
		}
		return -1
	}
	bad := -1
	if n < mergeBatch || runtime.GOMAXPROCS(0) < 2 {
		bad = resolve(0, n)
	} else {
		half := make(chan int)
		go func() { half <- resolve(n/2, n) }()
		bad = resolve(0, n/2)
		if b := <-half; bad < 0 {
			bad = b
		}
	}
	if bad >= 0 {
		p := r.pairs[bad]
		return fmt.Errorf("merge %d: %q %q: a token is not in the vocabulary", len(r.entries)+bad, p[0], p[1])
	}
	for _, id := range ids {
		r.entries = append(r.entries, mergeEntry{key: pairKey(id[0], id[1]), rank: int32(len(r.entries)), id: id[2]})
	}
	r.pairs = r.pairs[:0]
	return nil
}

// indexChars prepares a SentencePiece-style model: the tokens of single characters, the byte-fallback
// tokens, the unknown token, and where pieces may be cut into words (appendWords).
func (m *bpe) indexChars(mj *modelJSON, vocab map[string]int) error {
	m.vocab = vocab
	m.unk = -1
	if mj.UnkToken != nil && *mj.UnkToken != "" {
		id, ok := vocab[*mj.UnkToken]
		if !ok {
			return errAt("unk_token", fmt.Errorf("%q is not in the vocabulary", *mj.UnkToken))
		}
		m.unk = int32(id)
		m.fallbackLast, _ = utf8.DecodeLastRuneInString(*mj.UnkToken)
	}
	m.fuseUnk = mj.FuseUnk
	if mj.ByteFallback {
		for b := 0; b < 256; b++ {
			id, ok := vocab[byteTokenName(byte(b))]
			if !ok {
				return errAt("vocab", unsupported("byte_fallback without the token %s", byteTokenName(byte(b))))
			}
			m.byteTok[b] = int32(id)
		}
		m.byteFallback, m.fallbackLast = true, '>'
	} else if m.unk < 0 {
		// The reference fails to encode a character outside the vocabulary then.
		return errAt("unk_token", unsupported("neither byte_fallback nor an unk_token"))
	}
	for i := range m.asciiID {
		m.asciiID[i] = -1
	}
	m.charID = map[rune]int32{}
	m.crossesMeta = map[rune]bool{}
	for tok, id := range vocab {
		r, w := utf8.DecodeRuneInString(tok)
		if w == len(tok) && w > 0 && !(r == utf8.RuneError && w == 1) {
			if r < utf8.RuneSelf {
				m.asciiID[r] = int32(id)
			} else {
				m.charID[r] = int32(id)
			}
			continue
		}
		// Characters that some token has right before "▁": pieces are not cut there.
		for i := 1; i < len(tok); i++ {
			if k := strings.Index(tok[i:], "▁"); k < 0 {
				break
			} else {
				i += k
			}
			if prev, _ := utf8.DecodeLastRuneInString(tok[:i]); prev != '▁' {
				m.crossesMeta[prev] = true
			}
		}
	}
	_, hasMeta := m.charID['▁']
	m.cutWords = hasMeta && !m.ignoreMerges
	return nil
}
