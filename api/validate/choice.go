package validate

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Enum checks that the value is one of the given strings, reporting
// anything else as pydantic does for a Literal ("literal_error", "Input
// should be 'asc' or 'desc'").
func (n Node) Enum(values ...string) (string, bool) {
	if !n.usable() {
		return "", false
	}
	if s, ok := n.val.(string); ok {
		for _, v := range values {
			if s == v {
				return s, true
			}
		}
	}
	exp := Expected(values)
	n.Fail("literal_error", "Input should be "+exp, map[string]any{"expected": exp})
	return "", false
}

// Expected formats choices the way pydantic lists them: 'a', 'b' or 'c'.
func Expected(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + v + "'"
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// UUID checks for a UUID string (hyphenated, 32 hex digits, braced or with
// a urn:uuid: prefix, any case) and returns it in canonical lowercase form.
func (n Node) UUID() (string, bool) {
	if !n.usable() {
		return "", false
	}
	s, ok := n.val.(string)
	if !ok {
		n.Fail("uuid_type", "UUID input should be a string, bytes or UUID object", nil)
		return "", false
	}
	if u, err := uuid.Parse(s); err == nil {
		return u.String(), true
	}
	reason := uuidProblem(s)
	n.Fail("uuid_parsing", "Input should be a valid UUID, "+reason, map[string]any{"error": reason})
	return "", false
}

// uuidProblem explains why s is not a UUID in the words of the Rust uuid
// crate, which pydantic uses.
func uuidProblem(s string) string {
	body := strings.TrimPrefix(s, "urn:uuid:")
	offset := len(s) - len(body)
	if strings.HasPrefix(body, "{") && strings.HasSuffix(body, "}") && len(body) >= 2 {
		body, offset = body[1:len(body)-1], offset+1
	}
	for i, r := range body {
		if !isHex(r) && r != '-' {
			return fmt.Sprintf("invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `%c` at %d", r, offset+i+1)
		}
	}
	if !strings.Contains(body, "-") {
		return fmt.Sprintf("invalid length: expected length 32 for simple format, found %d", len(body))
	}
	groups := strings.Split(body, "-")
	want := []int{8, 4, 4, 4, 12}
	if len(groups) != len(want) {
		return fmt.Sprintf("invalid group count: expected 5, found %d", len(groups))
	}
	for i, g := range groups {
		if len(g) != want[i] {
			return fmt.Sprintf("invalid group length in group %d: expected %d, found %d", i, want[i], len(g))
		}
	}
	return "invalid format"
}

func isHex(r rune) bool {
	return (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
}

// Kind is a scalar type accepted by AnyOf.
type Kind int

// Scalar kinds, named in error locations as pydantic names union members.
const (
	KindFloat Kind = iota + 1 // "float"
	KindInt                   // "int"
	KindStr                   // "str"
	KindBool                  // "bool"
)

func (k Kind) tag() string {
	switch k {
	case KindFloat:
		return "float"
	case KindInt:
		return "int"
	case KindStr:
		return "str"
	case KindBool:
		return "bool"
	}
	return "unknown"
}

func (k Kind) convert(v any, strict bool) (any, *failure) {
	switch k {
	case KindFloat:
		return asFloat(v, strict)
	case KindInt:
		return asInt(v, strict)
	case KindStr:
		return asString(v)
	case KindBool:
		return asBool(v, strict)
	}
	return nil, fail("unknown", "unknown kind")
}

// AnyOf checks the value against a union of scalar types the way pydantic's
// smart union does: an exact match first, then (in lax mode) the first
// member that can coerce it. On failure it records one error per member,
// with the member's name appended to the location (["...","score","float"]).
// The result is float64, int, string or bool.
func (n Node) AnyOf(kinds ...Kind) (any, bool) {
	if !n.usable() {
		return nil, false
	}
	for _, k := range kinds {
		if exactKind(k, n.val) {
			if v, f := k.convert(n.val, true); f == nil {
				return v, true
			}
		}
	}
	failures := make([]*failure, len(kinds))
	for i, k := range kinds {
		v, f := k.convert(n.val, n.strict)
		if f == nil {
			return v, true
		}
		failures[i] = f
	}
	for i, k := range kinds {
		c := n.child(k.tag(), n.val, true, nil)
		c.record(failures[i])
	}
	return nil, false
}

func exactKind(k Kind, v any) bool {
	switch x := v.(type) {
	case Number:
		if k == KindInt {
			return x.IsInteger()
		}
		return k == KindFloat && !x.IsInteger()
	case string:
		return k == KindStr
	case bool:
		return k == KindBool
	}
	return false
}
