package validate

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// The decoded form of a JSON document is made of these Go values:
//
//	null    -> nil
//	true    -> bool
//	"text"  -> string
//	1.5     -> Number (the source text, so 1 and 1.0 stay distinct as in Python)
//	[...]   -> []any
//	{...}   -> *Object
//
// They marshal back to JSON faithfully, which is how validation errors echo
// the offending input.

// Number is a JSON number kept as its source text.
type Number string

// MarshalJSON writes the number as it was received, except one too large
// for a float64 (1e999), which is written as a string: most JSON decoders
// (Go's included) reject such a number, so echoing it in an error would
// make the whole error body unreadable.
func (n Number) MarshalJSON() ([]byte, error) {
	if f, err := strconv.ParseFloat(string(n), 64); err != nil && math.IsInf(f, 0) {
		return json.Marshal(string(n))
	}
	return []byte(n), nil
}

// IsInteger reports whether the number was written without a fraction or
// exponent, which is what makes Python's json module produce an int.
func (n Number) IsInteger() bool {
	for i := 0; i < len(n); i++ {
		switch n[i] {
		case '.', 'e', 'E':
			return false
		}
	}
	return true
}

// Object is a decoded JSON object. Keys keep the order in which they first
// appeared and a repeated key keeps its last value, as a Python dict built by
// json.loads does.
type Object struct {
	keys  []string
	vals  []any
	index map[string]int // built only for objects with many keys
	raw   []byte         // the object's bytes in the request body
}

// objectIndexMin is the key count from which lookups use a map rather than a
// scan; most JSON objects are small and a scan is cheaper than a map there.
const objectIndexMin = 16

// Len returns the number of keys.
func (o *Object) Len() int { return len(o.keys) }

// Keys returns the keys in order. The slice must not be modified.
func (o *Object) Keys() []string { return o.keys }

// Get returns the value of key and whether it is present.
func (o *Object) Get(key string) (any, bool) {
	if i := o.find(key); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// Raw returns the object exactly as it appeared in the request body. The
// slice aliases the body and must not be modified.
func (o *Object) Raw() []byte { return o.raw }

func (o *Object) find(key string) int {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range o.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// set adds or replaces a key while decoding.
func (o *Object) set(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
	if o.index != nil {
		o.index[key] = len(o.keys) - 1
	} else if len(o.keys) >= objectIndexMin {
		o.index = make(map[string]int, len(o.keys)*2)
		for i, k := range o.keys {
			o.index[k] = i
		}
	}
}

// MarshalJSON writes the object with its keys in order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
