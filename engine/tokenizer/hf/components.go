package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// This file turns the normalizer, pre_tokenizer and decoder objects of tokenizer.json into their Go
// counterparts. Every type or option it does not know is an error naming its JSON path, never ignored.

// object is a JSON object whose fields are decoded on demand.
type object map[string]json.RawMessage

// parseObject decodes raw as an object; null gives nil.
func parseObject(raw json.RawMessage) (object, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return o, nil
}

// fieldError is an error about the field at path (relative to the component being parsed).
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

func errAt(path string, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &fieldError{path + "." + fe.path, fe.err}
	}
	return &fieldError{path, err}
}

// get decodes field name into v; a missing or null field leaves v as it is.
func (o object) get(name string, v any) error {
	raw, ok := o[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errAt(name, err)
	}
	return nil
}

func (o object) typ() (string, error) {
	var t string
	if err := o.get("type", &t); err != nil {
		return "", err
	}
	if t == "" {
		return "", errAt("type", errors.New("missing"))
	}
	return t, nil
}

// list decodes field name as an array of objects.
func (o object) list(name string) ([]object, error) {
	var raws []json.RawMessage
	if err := o.get(name, &raws); err != nil {
		return nil, err
	}
	out := make([]object, len(raws))
	for i, r := range raws {
		var err error
		if out[i], err = parseObject(r); err != nil || out[i] == nil {
			if err == nil {
				err = errors.New("null")
			}
			return nil, errAt(fmt.Sprintf("%s[%d]", name, i), err)
		}
	}
	return out, nil
}

// parseNormalizer accepts the Unicode normalization forms, Replace, Prepend and Sequences of them.
func parseNormalizer(o object) (normalizer, error) {
	if o == nil {
		return nil, nil
	}
	t, err := o.typ()
	if err != nil {
		return nil, err
	}
	if f, ok := normForms[t]; ok {
		return normalizer{formStep{f}}, nil
	}
	switch t {
	case "Replace":
		r, err := parseReplace(o)
		if err != nil {
			return nil, err
		}
		return normalizer{r}, nil
	case "Prepend":
		var p string
		if err := o.get("prepend", &p); err != nil {
			return nil, err
		}
		return normalizer{prependStep(p)}, nil
	case "Sequence":
	default:
		return nil, errAt("type", unsupported("normalizer %q (supported: NFC, NFD, NFKC, NFKD, Replace, Prepend, Sequence)", t))
	}
	items, err := o.list("normalizers")
	if err != nil {
		return nil, err
	}
	var out normalizer
	for i, item := range items {
		n, err := parseNormalizer(item)
		if err != nil {
			return nil, errAt(fmt.Sprintf("normalizers[%d]", i), err)
		}
		out = append(out, n...)
	}
	return out, nil
}

// parseReplace reads the pattern and content of a Replace normalizer or decoder.
func parseReplace(o object) (*replacer, error) {
	var pattern struct {
		String *string
		Regex  *string
	}
	r := &replacer{}
	if err := o.get("pattern", &pattern); err != nil {
		return nil, err
	}
	if err := o.get("content", &r.content); err != nil {
		return nil, err
	}
	switch {
	case pattern.Regex != nil:
		re, err := compileRegex(*pattern.Regex)
		if err != nil {
			return nil, errAt("pattern.Regex", err)
		}
		r.m = re
	case pattern.String != nil && *pattern.String != "":
		r.literal = *pattern.String
	default:
		return nil, errAt("pattern", errors.New("needs a non-empty String or Regex"))
	}
	return r, nil
}

// parsePreTokenizer flattens the pre-tokenizer into splitting steps, followed by one ByteLevel for a
// byte-level BPE tokenizer (ByteLevel turns text into the byte alphabet, so nothing may follow it). Without
// ByteLevel (SentencePiece-style BPE: Metaspace, a Split, or no pre-tokenizer at all) the model works on the
// characters of the text.
func parsePreTokenizer(o object) (*preTokenizer, error) {
	p := &preTokenizer{}
	if o == nil {
		return p, nil
	}
	var walk func(o object) error
	walk = func(o object) error {
		t, err := o.typ()
		if err != nil {
			return err
		}
		if p.byteLevel {
			return errAt("type", unsupported("%s after ByteLevel: ByteLevel must be the last pre-tokenizer", t))
		}
		switch t {
		case "Sequence":
			items, err := o.list("pretokenizers")
			if err != nil {
				return err
			}
			for i, item := range items {
				if err := walk(item); err != nil {
					return errAt(fmt.Sprintf("pretokenizers[%d]", i), err)
				}
			}
		case "ByteLevel":
			if p.metaspace {
				return errAt("type", unsupported("ByteLevel after Metaspace"))
			}
			p.bl = byteLevel{addPrefixSpace: true, useRegex: true} // the library's defaults
			if err := o.get("add_prefix_space", &p.bl.addPrefixSpace); err != nil {
				return err
			}
			if err := o.get("use_regex", &p.bl.useRegex); err != nil {
				return err
			}
			p.byteLevel = true
		case "Metaspace":
			ms, err := parseMetaspace(o)
			if err != nil {
				return err
			}
			p.steps = append(p.steps, &metaspaceStep{metaspace: ms})
			p.metaspace = true
		case "Split":
			st, err := parseSplit(o)
			if err != nil {
				return err
			}
			p.steps = append(p.steps, st)
		case "Digits":
			var individual bool
			if err := o.get("individual_digits", &individual); err != nil {
				return err
			}
			st := &splitStep{m: digitMatcher{}, behavior: contiguous}
			if individual {
				st.behavior = isolated
			}
			p.steps = append(p.steps, st)
		default:
			return errAt("type", unsupported("pre-tokenizer %q (supported: Split, ByteLevel, Metaspace, Digits, Sequence)", t))
		}
		return nil
	}
	if err := walk(o); err != nil {
		return nil, err
	}
	return p, nil
}

// prependScheme says where Metaspace adds the replacement character in front of the text.
type prependScheme int

const (
	prependAlways prependScheme = iota // in front of every piece that does not start with it
	prependFirst                       // only in front of the piece at the start of the text
	prependNever
)

// metaspace is the configuration shared by the Metaspace pre-tokenizer and decoder.
type metaspace struct {
	replacement rune
	prepend     prependScheme
	splitWords  bool // split: the pre-tokenizer cuts before each replacement character
}

func parseMetaspace(o object) (metaspace, error) {
	m := metaspace{replacement: '▁', prepend: prependAlways, splitWords: true} // the library's defaults
	var rep string
	if err := o.get("replacement", &rep); err != nil {
		return m, err
	}
	if rep != "" {
		r, w := utf8.DecodeRuneInString(rep)
		if w != len(rep) {
			return m, errAt("replacement", fmt.Errorf("%q is not one character", rep))
		}
		m.replacement = r
	}
	if err := o.get("split", &m.splitWords); err != nil {
		return m, err
	}
	var addPrefix *bool
	if err := o.get("add_prefix_space", &addPrefix); err != nil {
		return m, err
	}
	var scheme string
	if err := o.get("prepend_scheme", &scheme); err != nil {
		return m, err
	}
	switch scheme {
	case "", "always":
		m.prepend = prependAlways
	case "first":
		m.prepend = prependFirst
	case "never":
		m.prepend = prependNever
	default:
		return m, errAt("prepend_scheme", unsupported("%q (supported: always, first, never)", scheme))
	}
	// Files older than prepend_scheme say add_prefix_space; the reference refuses the two when they
	// disagree (false with any scheme but "never", which is not the default).
	if addPrefix != nil && *addPrefix != (m.prepend != prependNever) {
		return m, errAt("add_prefix_space", fmt.Errorf("%v does not match prepend_scheme %q", *addPrefix, scheme))
	}
	return m, nil
}

func parseSplit(o object) (*splitStep, error) {
	var pattern struct {
		String *string
		Regex  *string
	}
	var b string
	st := &splitStep{}
	if err := o.get("pattern", &pattern); err != nil {
		return nil, err
	}
	if err := o.get("behavior", &b); err != nil {
		return nil, err
	}
	if err := o.get("invert", &st.invert); err != nil {
		return nil, err
	}
	var ok bool
	if st.behavior, ok = behaviors[b]; !ok {
		return nil, errAt("behavior", unsupported("%q", b))
	}
	switch {
	case pattern.Regex != nil:
		if sc, ok := scannerFor(*pattern.Regex); ok {
			st.m = sc
		} else {
			re, err := compileRegex(*pattern.Regex)
			if err != nil {
				return nil, errAt("pattern.Regex", err)
			}
			st.m = re
		}
	case pattern.String != nil && *pattern.String != "":
		st.m = literalMatcher(*pattern.String)
	default:
		return nil, errAt("pattern", errors.New("needs a non-empty String or Regex"))
	}
	return st, nil
}

// parseDecoder reads the decoder. A byte-level tokenizer needs the ByteLevel decoder, which makes decoding
// byte-exact. A SentencePiece-style one takes a chain of Replace, Strip and Metaspace steps on each token,
// then ByteFallback, then Fuse, then Replace and Strip steps on the whole text (Llama 2: Replace "▁" by " ",
// ByteFallback, Fuse, Strip one leading space; Gemma: the same without Strip). Other orders would make a
// token's text depend on its neighbours in ways this package does not model, and are refused.
func parseDecoder(o object, byteLevel bool) (*decoder, error) {
	if o == nil {
		if byteLevel {
			return nil, unsupported("no decoder: byte-level BPE needs the ByteLevel decoder")
		}
		return nil, unsupported("no decoder: the reference would join the tokens with spaces")
	}
	t, err := o.typ()
	if err != nil {
		return nil, err
	}
	if byteLevel {
		if t != "ByteLevel" {
			return nil, errAt("type", unsupported("decoder %q with a ByteLevel pre-tokenizer (supported: ByteLevel)", t))
		}
		return &decoder{byteLevel: true}, nil
	}
	d := &decoder{}
	const (
		perToken = iota // Replace, Strip, Metaspace on every token
		bytes           // after ByteFallback: only Fuse may follow
		whole           // after Fuse: Replace and Strip on the whole text
	)
	phase := perToken
	step := func(o object) error {
		t, err := o.typ()
		if err != nil {
			return err
		}
		switch {
		case t == "ByteFallback" && phase == perToken:
			d.byteFallback, phase = true, bytes
		case t == "Fuse" && phase != whole:
			phase = whole
		case t == "Replace" && phase != bytes:
			r, err := parseReplace(o)
			if err != nil {
				return err
			}
			if phase == perToken {
				d.perToken = append(d.perToken, r)
			} else {
				d.whole = append(d.whole, r)
			}
		case t == "Strip" && phase != bytes:
			s, err := parseStrip(o)
			if err != nil {
				return err
			}
			if phase == perToken {
				d.perToken = append(d.perToken, s)
			} else {
				d.whole = append(d.whole, s)
			}
		case t == "Metaspace" && phase == perToken:
			ms, err := parseMetaspace(o)
			if err != nil {
				return err
			}
			d.perToken = append(d.perToken, metaspaceDecoder{ms})
			d.firstDiffers = d.firstDiffers || ms.prepend != prependNever
		case t == "ByteLevel":
			return errAt("type", unsupported("decoder ByteLevel without a ByteLevel pre-tokenizer"))
		default:
			return errAt("type", unsupported("decoder %q here (supported: Replace, Strip, Metaspace, then ByteFallback, then Fuse, then Replace, Strip)", t))
		}
		return nil
	}
	if t != "Sequence" {
		return d, step(o)
	}
	items, err := o.list("decoders")
	if err != nil {
		return nil, err
	}
	for i, item := range items {
		if err := step(item); err != nil {
			return nil, errAt(fmt.Sprintf("decoders[%d]", i), err)
		}
	}
	return d, nil
}

func parseStrip(o object) (stripStep, error) {
	var content string
	s := stripStep{}
	if err := o.get("content", &content); err != nil {
		return s, err
	}
	r, w := utf8.DecodeRuneInString(content)
	if w == 0 || w != len(content) {
		return s, errAt("content", fmt.Errorf("%q is not one character", content))
	}
	s.content = r
	if err := o.get("start", &s.start); err != nil {
		return s, err
	}
	if err := o.get("stop", &s.stop); err != nil {
		return s, err
	}
	if s.start < 0 || s.stop < 0 {
		return s, errors.New("negative start or stop")
	}
	return s, nil
}
