package validate

import (
	"math"
	"strconv"
	"strings"
)

// failure is an error a conversion would record; conversions return it
// rather than recording, so AnyOf can try several types quietly.
type failure struct {
	typ, msg string
	ctx      map[string]any
}

func fail(typ, msg string) *failure { return &failure{typ: typ, msg: msg} }

func (n Node) record(f *failure) { n.Fail(f.typ, f.msg, f.ctx) }

// String checks for a JSON string. pydantic never turns numbers into strings,
// even in lax mode.
func (n Node) String(rules ...Rule[string]) (string, bool) {
	if !n.usable() {
		return "", false
	}
	s, f := asString(n.val)
	if f != nil {
		n.record(f)
		return "", false
	}
	return s, applyRules(n, s, rules)
}

// Float checks for a finite number. Lax mode (the default, as in FastAPI)
// also takes a numeric string and a boolean.
func (n Node) Float(rules ...Rule[float64]) (float64, bool) {
	if !n.usable() {
		return 0, false
	}
	v, f := asFloat(n.val, n.strict)
	if f != nil {
		n.record(f)
		return 0, false
	}
	return v, applyRules(n, v, rules)
}

// Int checks for an integer that fits in an int. Lax mode also takes a
// number without a fractional part (3.0), an integer string and a boolean.
func (n Node) Int(rules ...Rule[int]) (int, bool) {
	if !n.usable() {
		return 0, false
	}
	v, f := asInt(n.val, n.strict)
	if f != nil {
		n.record(f)
		return 0, false
	}
	return v, applyRules(n, v, rules)
}

// Bool checks for a boolean. Lax mode also takes 0/1 and the strings
// pydantic accepts ("true", "yes", "on", "1", ...).
func (n Node) Bool() (bool, bool) {
	if !n.usable() {
		return false, false
	}
	v, f := asBool(n.val, n.strict)
	if f != nil {
		n.record(f)
		return false, false
	}
	return v, true
}

func asString(v any) (string, *failure) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fail("string_type", "Input should be a valid string")
}

func asFloat(v any, strict bool) (float64, *failure) {
	switch x := v.(type) {
	case Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return finite(f)
	case bool:
		if !strict {
			return boolFloat(x), nil
		}
	case string:
		if !strict {
			f, ok := parseDecimal(x)
			if !ok {
				return 0, fail("float_parsing", "Input should be a valid number, unable to parse string as a number")
			}
			return finite(f)
		}
	}
	return 0, fail("float_type", "Input should be a valid number")
}

func finite(f float64) (float64, *failure) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fail("finite_number", "Input should be a finite number")
	}
	return f, nil
}

// parseDecimal parses a decimal number written as Python's float() would
// take it, minus inf and nan (reported as not finite by the caller).
func parseDecimal(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "xX_pP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var (
	errIntType     = fail("int_type", "Input should be a valid integer")
	errIntParsing  = fail("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
	errIntFraction = fail("int_from_float", "Input should be a valid integer, got a number with a fractional part")
	errIntSize     = fail("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size")
)

func asInt(v any, strict bool) (int, *failure) {
	switch x := v.(type) {
	case Number:
		if x.IsInteger() {
			i, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return 0, errIntSize
			}
			return int(i), nil
		}
		if strict {
			return 0, errIntType
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return floatInt(f)
	case bool:
		if !strict {
			return int(boolFloat(x)), nil
		}
	case string:
		if !strict {
			s := strings.TrimSpace(x)
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return int(i), nil
			} else if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, errIntSize
			}
			return 0, errIntParsing
		}
	}
	return 0, errIntType
}

func floatInt(f float64) (int, *failure) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fail("finite_number", "Input should be a finite number")
	}
	if f != math.Trunc(f) {
		return 0, errIntFraction
	}
	if f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, errIntSize
	}
	return int(f), nil
}

var (
	trueStrings  = map[string]bool{"1": true, "on": true, "t": true, "true": true, "y": true, "yes": true}
	falseStrings = map[string]bool{"0": true, "off": true, "f": true, "false": true, "n": true, "no": true}
	errBoolType  = fail("bool_type", "Input should be a valid boolean")
	errBoolParse = fail("bool_parsing", "Input should be a valid boolean, unable to interpret input")
)

func asBool(v any, strict bool) (bool, *failure) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case Number:
		if strict {
			return false, errBoolType
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		switch f {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
		return false, errBoolParse
	case string:
		if strict {
			return false, errBoolType
		}
		s := strings.ToLower(strings.TrimSpace(x))
		switch {
		case trueStrings[s]:
			return true, nil
		case falseStrings[s]:
			return false, nil
		}
		return false, errBoolParse
	}
	return false, errBoolType
}
