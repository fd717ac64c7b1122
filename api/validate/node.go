package validate

import (
	"fmt"
	"net/url"
)

// Node is one value of a request at a location such as
// ["body","trajectory_groups",0]. Nodes are small values; the accessors
// never modify the receiver.
type Node struct {
	errs     *Errors
	at       *path
	val      any
	present  bool
	parent   any // echoed as the input of a "missing" error, like pydantic
	optional bool
	nullable bool
	strict   bool
}

// At returns the node for a present value at loc (e.g. "body", or "path",
// "model_id").
func (e *Errors) At(val any, loc ...any) Node {
	return Node{errs: e, at: newPath(loc), val: val, present: true}
}

// Absent returns the node for a value that was not sent; parent is what a
// "missing" error echoes as its input (nil for query and path parameters).
func (e *Errors) Absent(parent any, loc ...any) Node {
	return Node{errs: e, at: newPath(loc), parent: parent}
}

// path is a location kept as a list from the leaf up, so a child shares its
// parent's location instead of copying it; the slice is built only for an
// error.
type path struct {
	up  *path
	key any
}

func newPath(loc []any) *path {
	var p *path
	for _, k := range loc {
		p = &path{up: p, key: k}
	}
	return p
}

func (p *path) slice() []any {
	n := 0
	for q := p; q != nil; q = q.up {
		n++
	}
	out := make([]any, n)
	for q := p; q != nil; q = q.up {
		n--
		out[n] = q.key
	}
	return out
}

// Query returns the node of query parameter name at ["query", name]. As in
// FastAPI, a repeated parameter takes its last value.
func (e *Errors) Query(q url.Values, name string) Node {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return e.Absent(nil, "query", name)
	}
	return e.At(vs[len(vs)-1], "query", name)
}

// Errors returns the collector the node records into, e.g. to tell
// whether a sub-check found anything (compare Len before and after).
func (n Node) Errors() *Errors { return n.errs }

// Loc returns the node's location.
func (n Node) Loc() []any { return n.at.slice() }

// Value returns the decoded value (see value.go), nil when absent.
func (n Node) Value() any { return n.val }

// Present reports whether the value was sent (null counts as sent).
func (n Node) Present() bool { return n.present }

// IsNull reports whether the value was sent as null.
func (n Node) IsNull() bool { return n.present && n.val == nil }

// Optional returns the node with absence allowed: accessors then return
// ok=false without recording an error when the value was not sent.
func (n Node) Optional() Node { n.optional = true; return n }

// Nullable returns the node with null allowed: accessors then return
// ok=false without recording an error for null.
func (n Node) Nullable() Node { n.nullable = true; return n }

// Strict returns the node with pydantic's lax coercions turned off (no
// "1.5" for a number, no 1 for true). Use it for fields that are later
// decoded into Go types, which do not coerce.
func (n Node) Strict() Node { n.strict = true; return n }

// Fail records an error of type typ at the node.
func (n Node) Fail(typ, msg string, ctx map[string]any) {
	input := n.val
	if !n.present {
		input = n.parent
	}
	n.errs.Add(Error{Type: typ, Loc: n.Loc(), Msg: msg, Input: input, Ctx: ctx})
}

// Invalid records a custom value error, as a pydantic validator raising
// ValueError(msg) would: type "value_error", msg "Value error, <msg>".
func (n Node) Invalid(msg string) {
	n.Fail("value_error", "Value error, "+msg, map[string]any{"error": msg})
}

// Member returns the node's value at loc+tag, for reporting which member
// of a union an error belongs to, as pydantic does (["...","content","str"]).
func (n Node) Member(tag string) Node {
	return n.child(tag, n.val, n.present, n.parent)
}

// child returns the node at loc+key holding val.
func (n Node) child(key any, val any, present bool, parent any) Node {
	return Node{
		errs:    n.errs,
		at:      &path{up: n.at, key: key},
		val:     val,
		present: present,
		parent:  parent,
		strict:  n.strict,
	}
}

// usable runs the checks common to every accessor: a missing required value
// records "missing"; an allowed absence or null returns false silently.
func (n Node) usable() bool {
	if !n.present {
		if !n.optional {
			n.Fail("missing", "Field required", nil)
		}
		return false
	}
	if n.val == nil && n.nullable {
		return false
	}
	return true
}

// List checks that the value is a JSON array and returns a node per item.
func (n Node) List(rules ...Rule[[]any]) ([]Node, bool) {
	if !n.usable() {
		return nil, false
	}
	items, ok := n.val.([]any)
	if !ok {
		n.Fail("list_type", "Input should be a valid list", nil)
		return nil, false
	}
	if !applyRules(n, items, rules) {
		return nil, false
	}
	nodes := make([]Node, len(items))
	for i, v := range items {
		nodes[i] = n.child(i, v, true, nil)
	}
	return nodes, true
}

// Obj is an object node; Field looks up its members.
type Obj struct {
	Node
	obj *Object
}

// Model checks that the value is an object, reporting a non-object the way
// FastAPI does for a pydantic model ("model_attributes_type").
func (n Node) Model() (Obj, bool) {
	return n.object("model_attributes_type", "Input should be a valid dictionary or object to extract fields from")
}

// Dict checks that the value is an object, reporting a non-object the way
// pydantic does for a dict field ("dict_type").
func (n Node) Dict() (Obj, bool) {
	return n.object("dict_type", "Input should be a valid dictionary")
}

func (n Node) object(typ, msg string) (Obj, bool) {
	if !n.usable() {
		return Obj{Node: n}, false
	}
	o, ok := n.val.(*Object)
	if !ok {
		n.Fail(typ, msg, nil)
		return Obj{Node: n}, false
	}
	return Obj{Node: n, obj: o}, true
}

// Field returns the member name. On an Obj that failed its check it returns
// an optional absent node, so no second error is reported underneath.
func (o Obj) Field(name string) Node {
	if o.obj == nil {
		return o.child(name, nil, false, nil).Optional()
	}
	v, ok := o.obj.Get(name)
	return o.child(name, v, ok, o.obj)
}

// Has reports whether the member name was sent.
func (o Obj) Has(name string) bool {
	if o.obj == nil {
		return false
	}
	_, ok := o.obj.Get(name)
	return ok
}

// Entries returns a node per member, in order, with the key in the location.
func (o Obj) Entries() []Node {
	if o.obj == nil {
		return nil
	}
	out := make([]Node, len(o.obj.keys))
	for i, k := range o.obj.keys {
		out[i] = o.child(k, o.obj.vals[i], true, o.obj)
	}
	return out
}

// Key returns the last element of the node's location as a string: the
// member name of a node from Entries or Field.
func (n Node) Key() string {
	if n.at == nil {
		return ""
	}
	return fmt.Sprint(n.at.key)
}

// Raw returns the object's bytes exactly as the client sent them (nil if
// the node is not an object).
func (o Obj) Raw() []byte {
	if o.obj == nil {
		return nil
	}
	return o.obj.raw
}

// Object returns the decoded object (nil if the check failed).
func (o Obj) Object() *Object { return o.obj }
