package hf

import (
	"encoding/json"
	"errors"
	"fmt"
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

// parseNormalizer accepts the Unicode normalization forms and Sequences of them.
func parseNormalizer(o object) (normalizer, error) {
	if o == nil {
		return nil, nil
	}
	t, err := o.typ()
	if err != nil {
		return nil, err
	}
	if f, ok := normForms[t]; ok {
		return normalizer{f}, nil
	}
	if t != "Sequence" {
		return nil, errAt("type", unsupported("normalizer %q (supported: NFC, NFD, NFKC, NFKD, Sequence)", t))
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

// parsePreTokenizer flattens the pre-tokenizer into splitting steps followed by one ByteLevel, the shape of
// every byte-level BPE tokenizer: ByteLevel turns text into the byte alphabet, so nothing may follow it.
func parsePreTokenizer(o object) (*preTokenizer, error) {
	if o == nil {
		return nil, unsupported("no pre_tokenizer: a byte-level BPE tokenizer needs a ByteLevel pre-tokenizer")
	}
	p := &preTokenizer{}
	found := false
	var walk func(o object) error
	walk = func(o object) error {
		t, err := o.typ()
		if err != nil {
			return err
		}
		if found {
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
			p.bl = byteLevel{addPrefixSpace: true, useRegex: true} // the library's defaults
			if err := o.get("add_prefix_space", &p.bl.addPrefixSpace); err != nil {
				return err
			}
			if err := o.get("use_regex", &p.bl.useRegex); err != nil {
				return err
			}
			found = true
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
			return errAt("type", unsupported("pre-tokenizer %q (supported: Split, ByteLevel, Digits, Sequence)", t))
		}
		return nil
	}
	if err := walk(o); err != nil {
		return nil, err
	}
	if !found {
		return nil, unsupported("no ByteLevel pre-tokenizer: only byte-level BPE is implemented")
	}
	return p, nil
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

// parseDecoder accepts the ByteLevel decoder only: it is what makes decoding byte-exact.
func parseDecoder(o object) error {
	if o == nil {
		return unsupported("no decoder: byte-level BPE needs the ByteLevel decoder")
	}
	t, err := o.typ()
	if err != nil {
		return err
	}
	if t != "ByteLevel" {
		return errAt("type", unsupported("decoder %q (supported: ByteLevel)", t))
	}
	return nil
}
