package hftemplate

import (
	"fmt"
	"sort"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// Dicts from JSON are *exec.Dict (ordered pairs); gonja's dict methods and items filter would go through
// a Go map and sort the keys, so these keep Python's insertion order.

// orderedItems lists a mapping's (key, value) pairs: a dict from JSON in its key order, a Go map (such
// as a namespace) sorted by key.
func orderedItems(v *exec.Value) ([]any, bool) {
	switch d := v.Interface().(type) {
	case *exec.Dict:
		out := make([]any, len(d.Pairs))
		for i, p := range d.Pairs {
			out[i] = []any{p.Key.Interface(), p.Value.Interface()}
		}
		return out, true
	case exec.Dict:
		return orderedItems(exec.AsValue(&d))
	case map[string]any:
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = []any{k, d[k]}
		}
		return out, true
	}
	return nil, false
}

// filterItems is Jinja's items filter with Python's dict order.
func filterItems(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	items, ok := orderedItems(in)
	if !ok {
		return exec.AsValue(fmt.Errorf("items: %s is not a mapping", in.String()))
	}
	return exec.AsValue(items)
}

// dictMethods are the read-only dict methods, in Python's order; the mutating ones (pop, update, ...)
// are absent, as in HF's immutable sandbox.
func dictMethods() *exec.MethodSet[map[string]any] {
	m := map[string]exec.Method[map[string]any]{
		"items": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			items, _ := orderedItems(self)
			return items, a.Take()
		},
		"keys": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			items, _ := orderedItems(self)
			out := make([]any, len(items))
			for i, it := range items {
				out[i] = it.([]any)[0]
			}
			return out, a.Take()
		},
		"values": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			items, _ := orderedItems(self)
			out := make([]any, len(items))
			for i, it := range items {
				out[i] = it.([]any)[1]
			}
			return out, a.Take()
		},
	}
	if fn, ok := builtins.Methods.Dict.Get("get"); ok {
		m["get"] = fn
	}
	return exec.NewMethodSet(m)
}

// listMethods has only copy: list.append/reverse mutate, which the immutable sandbox forbids.
func listMethods() *exec.MethodSet[[]any] {
	m := map[string]exec.Method[[]any]{}
	if fn, ok := builtins.Methods.List.Get("copy"); ok {
		m["copy"] = fn
	}
	return exec.NewMethodSet(m)
}
