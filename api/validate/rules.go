package validate

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Rule is a constraint checked after a value has the right type. It
// records its own error on n and reports whether v passed. Write custom
// rules with n.Fail or n.Invalid.
type Rule[T any] func(n Node, v T) bool

// applyRules runs rules in order and stops at the first failure, as
// pydantic reports one constraint error per value.
func applyRules[T any](n Node, v T, rules []Rule[T]) bool {
	for _, r := range rules {
		if !r(n, v) {
			return false
		}
	}
	return true
}

func plural(k int) string {
	if k == 1 {
		return ""
	}
	return "s"
}

// MinLen requires at least k characters.
func MinLen(k int) Rule[string] {
	return func(n Node, s string) bool {
		if utf8.RuneCountInString(s) >= k {
			return true
		}
		n.Fail("string_too_short", fmt.Sprintf("String should have at least %d character%s", k, plural(k)),
			map[string]any{"min_length": k})
		return false
	}
}

// MaxLen allows at most k characters.
func MaxLen(k int) Rule[string] {
	return func(n Node, s string) bool {
		if utf8.RuneCountInString(s) <= k {
			return true
		}
		n.Fail("string_too_long", fmt.Sprintf("String should have at most %d character%s", k, plural(k)),
			map[string]any{"max_length": k})
		return false
	}
}

// Pattern requires a match of the regular expression expr (compiled once,
// here; a bad expression is a programming error and panics at start-up).
func Pattern(expr string) Rule[string] {
	re := regexp.MustCompile(expr)
	return func(n Node, s string) bool {
		if re.MatchString(s) {
			return true
		}
		n.Fail("string_pattern_mismatch", fmt.Sprintf("String should match pattern '%s'", expr),
			map[string]any{"pattern": expr})
		return false
	}
}

// Ge requires v >= min.
func Ge[T int | float64](min T) Rule[T] {
	return func(n Node, v T) bool {
		if v >= min {
			return true
		}
		n.Fail("greater_than_equal", "Input should be greater than or equal to "+pyNumber(min),
			map[string]any{"ge": min})
		return false
	}
}

// Le requires v <= max.
func Le[T int | float64](max T) Rule[T] {
	return func(n Node, v T) bool {
		if v <= max {
			return true
		}
		n.Fail("less_than_equal", "Input should be less than or equal to "+pyNumber(max),
			map[string]any{"le": max})
		return false
	}
}

// pyNumber writes a number as Python's str() would (floats keep ".0").
func pyNumber[T int | float64](v T) string {
	switch x := any(v).(type) {
	case int:
		return strconv.Itoa(x)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if x == math.Trunc(x) && !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	}
	return fmt.Sprint(v)
}

// MinItems requires a list of at least k items. List rules see the raw
// items, so a huge list is rejected before a node is built per item.
func MinItems(k int) Rule[[]any] {
	return func(n Node, items []any) bool {
		if len(items) >= k {
			return true
		}
		n.Fail("too_short", fmt.Sprintf("List should have at least %d item%s after validation, not %d", k, plural(k), len(items)),
			map[string]any{"field_type": "List", "min_length": k, "actual_length": len(items)})
		return false
	}
}

// MaxItems allows a list of at most k items.
func MaxItems(k int) Rule[[]any] {
	return func(n Node, items []any) bool {
		if len(items) <= k {
			return true
		}
		n.Fail("too_long", fmt.Sprintf("List should have at most %d item%s after validation, not %d", k, plural(k), len(items)),
			map[string]any{"field_type": "List", "max_length": k, "actual_length": len(items)})
		return false
	}
}
