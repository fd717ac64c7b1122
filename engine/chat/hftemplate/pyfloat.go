package hftemplate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// pyFloat formats f as Python's repr; with json set, as json.dumps, which spells the non-finite values
// NaN, Infinity and -Infinity where repr says nan, inf and -inf.
func pyFloat(f float64, json bool) string {
	switch {
	case math.IsNaN(f) && json:
		return "NaN"
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 0):
		s := "inf"
		if json {
			s = "Infinity"
		}
		if f < 0 {
			return "-" + s
		}
		return s
	}
	// Shortest round-trip digits, laid out as repr does: positional for 1e-4 <= |f| < 1e16, else
	// d.ddde±XX with at least two exponent digits.
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d.dddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp < -4 || exp >= 16 {
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, mant, es, exp)
	}
	digits := strings.Replace(mant, ".", "", 1)
	switch {
	case exp < 0:
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	case len(digits) <= exp+1:
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	default:
		return sign + digits[:exp+1] + "." + digits[exp+1:]
	}
}
