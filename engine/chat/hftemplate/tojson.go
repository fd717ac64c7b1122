package hftemplate

import (
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// jsonOptions are the arguments of HF's tojson filter, which is Python's json.dumps:
// tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
type jsonOptions struct {
	ensureASCII bool
	indent      *string // nil: one line
	itemSep     string
	keySep      string
	sortKeys    bool
}

// filterToJSON replaces gonja's tojson (which sorts keys and escapes HTML) with HF's.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	opts, err := jsonArgs(params)
	if err != nil {
		return exec.AsValue(fmt.Errorf("tojson: %w", err))
	}
	var b strings.Builder
	if err := writeJSON(&b, in.Interface(), &opts, 0); err != nil {
		return exec.AsValue(fmt.Errorf("tojson: %w", err))
	}
	return exec.AsValue(b.String())
}

func jsonArgs(params *exec.VarArgs) (jsonOptions, error) {
	opts := jsonOptions{itemSep: ", ", keySep: ": "}
	args := map[string]*exec.Value{}
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	for i, a := range params.Args {
		if i >= len(names) {
			return opts, fmt.Errorf("too many arguments")
		}
		args[names[i]] = a
	}
	for k, v := range params.KwArgs {
		if _, dup := args[k]; dup || !contains(names, k) {
			return opts, fmt.Errorf("unexpected argument %q", k)
		}
		args[k] = v
	}
	if v, ok := args["ensure_ascii"]; ok {
		opts.ensureASCII = v.IsTrue()
	}
	if v, ok := args["sort_keys"]; ok {
		opts.sortKeys = v.IsTrue()
	}
	if v, ok := args["indent"]; ok && !v.IsNil() {
		var s string
		switch {
		case v.IsInteger():
			s = strings.Repeat(" ", max(v.Integer(), 0))
		case v.IsString():
			s = v.String()
		default:
			return opts, fmt.Errorf("indent must be an integer or a string")
		}
		opts.indent = &s
		opts.itemSep = ","
	}
	if v, ok := args["separators"]; ok && !v.IsNil() {
		if !v.IsList() || v.Len() != 2 {
			return opts, fmt.Errorf("separators must be an (item, key) pair")
		}
		opts.itemSep, opts.keySep = v.Index(0).String(), v.Index(1).String()
	}
	return opts, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (o *jsonOptions) newline(b *strings.Builder, depth int) {
	if o.indent == nil {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(*o.indent)
	}
}

// writeJSON writes v as json.dumps would. Values come from decodeJSON (ordered dicts, ints, big ints,
// floats) or from the template itself (maps, slices, gonja values).
func writeJSON(b *strings.Builder, v any, o *jsonOptions, depth int) error {
	if depth > 512 {
		return fmt.Errorf("value nested too deeply")
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case *exec.Value:
		if x == nil || x.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, x.Interface(), o, depth)
	case string:
		writeString(b, x, o.ensureASCII)
		return nil
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
		return nil
	case *big.Int:
		b.WriteString(x.String())
		return nil
	case float64:
		b.WriteString(pyFloat(x, true))
		return nil
	case float32:
		b.WriteString(pyFloat(float64(x), true))
		return nil
	case *exec.Dict:
		return writeObject(b, dictPairs(x), o, depth)
	case exec.Dict:
		return writeObject(b, dictPairs(&x), o, depth)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
		return nil
	case reflect.String:
		writeString(b, rv.String(), o.ensureASCII)
		return nil
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		if rv.Len() == 0 {
			b.WriteByte(']')
			return nil
		}
		for i := range rv.Len() {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			o.newline(b, depth+1)
			if err := writeJSON(b, rv.Index(i).Interface(), o, depth+1); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte(']')
		return nil
	case reflect.Map:
		keys := rv.MapKeys()
		pairs := make([]jsonPair, 0, len(keys))
		for _, k := range keys {
			if k.Kind() != reflect.String {
				return fmt.Errorf("keys must be strings, not %s", k.Kind())
			}
			pairs = append(pairs, jsonPair{k.String(), rv.MapIndex(k).Interface()})
		}
		// A Go map has no insertion order; sorting keeps the output deterministic.
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
		return writeObject(b, pairs, o, depth)
	case reflect.Pointer:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, rv.Elem().Interface(), o, depth)
	}
	return fmt.Errorf("object of type %T is not JSON serializable", v)
}

type jsonPair struct {
	key   string
	value any
}

func dictPairs(d *exec.Dict) []jsonPair {
	pairs := make([]jsonPair, len(d.Pairs))
	for i, p := range d.Pairs {
		pairs[i] = jsonPair{p.Key.String(), p.Value}
	}
	return pairs
}

func writeObject(b *strings.Builder, pairs []jsonPair, o *jsonOptions, depth int) error {
	if o.sortKeys {
		pairs = append([]jsonPair(nil), pairs...)
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
	}
	b.WriteByte('{')
	if len(pairs) == 0 {
		b.WriteByte('}')
		return nil
	}
	for i, p := range pairs {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, depth+1)
		writeString(b, p.key, o.ensureASCII)
		b.WriteString(o.keySep)
		if err := writeJSON(b, p.value, o, depth+1); err != nil {
			return err
		}
	}
	o.newline(b, depth)
	b.WriteByte('}')
	return nil
}

// writeString quotes s like json.dumps: only '"', '\\' and control characters are escaped, plus every
// non-ASCII character (as UTF-16 \uXXXX units) when ensureASCII is set.
func writeString(b *strings.Builder, s string, ensureASCII bool) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (ensureASCII && r > 0x7f && r < 0x10000):
			b.WriteString(`\u`)
			b.WriteByte(hex[r>>12&0xf])
			b.WriteByte(hex[r>>8&0xf])
			b.WriteByte(hex[r>>4&0xf])
			b.WriteByte(hex[r&0xf])
		case ensureASCII && r >= 0x10000:
			r -= 0x10000
			for _, u := range []rune{0xd800 + r>>10, 0xdc00 + r&0x3ff} {
				b.WriteString(`\u`)
				b.WriteByte(hex[u>>12&0xf])
				b.WriteByte(hex[u>>8&0xf])
				b.WriteByte(hex[u>>4&0xf])
				b.WriteByte(hex[u&0xf])
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
