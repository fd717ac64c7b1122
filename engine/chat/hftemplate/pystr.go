package hftemplate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// gonja's own str methods are used where they behave as Python's; these replace the ones that do not
// (gonja v2.9.1: strip/lstrip/rstrip/split without arguments fail, replace demands a count, count
// miscounts, and its whitespace is Go's, which lacks \x1c-\x1f).
var strOverrides = map[string]exec.Method[string]{
	"strip":   func(s string, _ *exec.Value, a *exec.VarArgs) (any, error) { return stripMethod(s, a, true, true) },
	"lstrip":  func(s string, _ *exec.Value, a *exec.VarArgs) (any, error) { return stripMethod(s, a, true, false) },
	"rstrip":  func(s string, _ *exec.Value, a *exec.VarArgs) (any, error) { return stripMethod(s, a, false, true) },
	"split":   func(s string, _ *exec.Value, a *exec.VarArgs) (any, error) { return splitMethod(s, a, false) },
	"rsplit":  func(s string, _ *exec.Value, a *exec.VarArgs) (any, error) { return splitMethod(s, a, true) },
	"replace": replaceMethod,
	"count":   countMethod,
}

// strDelegated are the str methods taken from gonja as they are.
var strDelegated = []string{"capitalize", "casefold", "center", "endswith", "expandtabs", "find",
	"format", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "islower", "isnumeric", "isprintable",
	"isspace", "istitle", "isupper", "join", "ljust", "lower", "partition", "removeprefix", "removesuffix",
	"rfind", "rjust", "rpartition", "splitlines", "startswith", "swapcase", "title", "upper", "zfill"}

func strMethods() *exec.MethodSet[string] {
	m := map[string]exec.Method[string]{}
	for _, name := range strDelegated {
		if fn, ok := builtins.Methods.Str.Get(name); ok {
			m[name] = fn
		}
	}
	for name, fn := range strOverrides {
		m[name] = fn
	}
	return exec.NewMethodSet(m)
}

// pySpace is Python's str.isspace for one character.
func pySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// args binds positional and keyword arguments to names, Python style; absent ones are nil.
func args(a *exec.VarArgs, names ...string) ([]*exec.Value, error) {
	out := make([]*exec.Value, len(names))
	if len(a.Args) > len(names) {
		return nil, fmt.Errorf("takes at most %d arguments (%d given)", len(names), len(a.Args))
	}
	copy(out, a.Args)
	for k, v := range a.KwArgs {
		i := indexOf(names, k)
		if i < 0 || out[i] != nil {
			return nil, fmt.Errorf("unexpected argument %q", k)
		}
		out[i] = v
	}
	return out, nil
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

func optString(v *exec.Value, what string) (string, bool, error) {
	if v == nil || v.IsNil() {
		return "", false, nil
	}
	if !v.IsString() {
		return "", false, fmt.Errorf("%s must be a string or None", what)
	}
	return v.String(), true, nil
}

func stripMethod(s string, a *exec.VarArgs, left, right bool) (any, error) {
	v, err := args(a, "chars")
	if err != nil {
		return nil, err
	}
	chars, ok, err := optString(v[0], "chars")
	if err != nil {
		return nil, err
	}
	return pyStrip(s, chars, ok, left, right), nil
}

// pyStrip is str.strip/lstrip/rstrip: whitespace when no chars are given, else any of chars.
func pyStrip(s, chars string, haveChars, left, right bool) string {
	cut := pySpace
	if haveChars {
		cut = func(r rune) bool { return strings.ContainsRune(chars, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s
}

func splitMethod(s string, a *exec.VarArgs, fromRight bool) (any, error) {
	v, err := args(a, "sep", "maxsplit")
	if err != nil {
		return nil, err
	}
	sep, haveSep, err := optString(v[0], "sep")
	if err != nil {
		return nil, err
	}
	maxsplit := -1
	if v[1] != nil && !v[1].IsNil() {
		if !v[1].IsInteger() {
			return nil, fmt.Errorf("maxsplit must be an integer")
		}
		maxsplit = v[1].Integer()
	}
	var parts []string
	switch {
	case haveSep && sep == "":
		return nil, fmt.Errorf("empty separator")
	case haveSep && maxsplit < 0:
		parts = strings.Split(s, sep)
	case haveSep && !fromRight:
		parts = strings.SplitN(s, sep, maxsplit+1)
	case haveSep:
		parts = rsplitN(s, sep, maxsplit)
	default:
		parts = splitSpace(s, maxsplit, fromRight)
	}
	out := make(pyList, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

func rsplitN(s, sep string, maxsplit int) []string {
	var rev []string
	for maxsplit > 0 {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		rev = append(rev, s[i+len(sep):])
		s = s[:i]
		maxsplit--
	}
	out := []string{s}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}

// splitSpace is str.split()/rsplit() without a separator: runs of whitespace separate and no piece is
// empty; after maxsplit pieces the rest is one piece, keeping its inner and far-end whitespace.
func splitSpace(s string, maxsplit int, fromRight bool) []string {
	var out []string
	if !fromRight {
		i := 0
		for {
			i += len(s[i:]) - len(strings.TrimLeftFunc(s[i:], pySpace))
			if i == len(s) {
				return out
			}
			if maxsplit >= 0 && len(out) == maxsplit {
				return append(out, s[i:])
			}
			j := strings.IndexFunc(s[i:], pySpace)
			if j < 0 {
				return append(out, s[i:])
			}
			out = append(out, s[i:i+j])
			i += j
		}
	}
	j := len(s)
	for {
		j = len(strings.TrimRightFunc(s[:j], pySpace))
		if j == 0 {
			break
		}
		if maxsplit >= 0 && len(out) == maxsplit {
			out = append(out, s[:j])
			break
		}
		i := strings.LastIndexFunc(s[:j], pySpace)
		if i < 0 {
			out = append(out, s[:j])
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		out = append(out, s[i+size:j])
		j = i
	}
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	return out
}

// countMethod is str.count(sub[, start[, end]]): non-overlapping occurrences, positions in characters.
func countMethod(s string, _ *exec.Value, a *exec.VarArgs) (any, error) {
	v, err := args(a, "sub", "start", "end")
	if err != nil {
		return nil, err
	}
	if v[0] == nil || !v[0].IsString() {
		return nil, fmt.Errorf("count() takes a string")
	}
	r := []rune(s)
	lo, hi := 0, len(r)
	clamp := func(x *exec.Value, dflt int) int {
		if x == nil || x.IsNil() {
			return dflt
		}
		n := x.Integer()
		if n < 0 {
			n += len(r)
		}
		return max(0, min(n, len(r)))
	}
	lo, hi = clamp(v[1], lo), clamp(v[2], hi)
	if lo > hi {
		return 0, nil
	}
	return strings.Count(string(r[lo:hi]), v[0].String()), nil
}

func replaceMethod(s string, _ *exec.Value, a *exec.VarArgs) (any, error) {
	v, err := args(a, "old", "new", "count")
	if err != nil {
		return nil, err
	}
	if v[0] == nil || v[1] == nil || !v[0].IsString() || !v[1].IsString() {
		return nil, fmt.Errorf("replace() takes two strings")
	}
	count := -1
	if v[2] != nil {
		if !v[2].IsInteger() {
			return nil, fmt.Errorf("count must be an integer")
		}
		count = v[2].Integer()
	}
	return strings.Replace(s, v[0].String(), v[1].String(), count), nil
}

// filterTrim is Jinja's trim(value, chars=None), which is str.strip.
func filterTrim(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	v, err := args(params, "chars")
	if err != nil {
		return exec.AsValue(fmt.Errorf("trim: %w", err))
	}
	chars, ok, err := optString(v[0], "chars")
	if err != nil {
		return exec.AsValue(fmt.Errorf("trim: %w", err))
	}
	return exec.AsValue(pyStrip(in.String(), chars, ok, true, true))
}
