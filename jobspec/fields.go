package jobspec

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// FieldKind is the JSON type a configuration field must have.
type FieldKind int

// Field kinds.
const (
	KindAny FieldKind = iota // an object or anything (checked by the parser)
	KindFloat
	KindInt
	KindBool
	KindString
	KindEnum // a string out of Field.Values
)

// Field is one known key of a configuration object.
type Field struct {
	Name   string
	Kind   FieldKind
	Values []string // for KindEnum
}

// RLEnums are the values the hosted service's document allows for the
// enum fields of an RL experimental_config; ParseRLConfig then refuses the
// ones trainyard does not implement, with a message that says so.
var RLEnums = map[string][]string{
	"importance_sampling_level": {"token", "sequence", "average", "geometric_average"},
	"loss_fn":                   {"cispo", "ppo"},
	"kl_penalty_source":         {"current_learner", "sample"},
}

// RLFields lists the known keys of an RL experimental_config with their
// types, read off the struct ParseRLConfig decodes into, so the API's type
// checks (FastAPI-shaped errors) and the parser are one schema.
func RLFields() []Field { return fieldsOf(reflect.TypeOf(rlConfigWire{}), RLEnums) }

func fieldsOf(t reflect.Type, enums map[string][]string) []Field {
	raw := reflect.TypeOf(json.RawMessage{})
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		typ := f.Type
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		field := Field{Name: name}
		switch {
		case enums[name] != nil:
			field.Kind, field.Values = KindEnum, enums[name]
		case typ == raw:
			field.Kind = KindAny
		case typ.Kind() == reflect.Float64:
			field.Kind = KindFloat
		case typ.Kind() == reflect.Int || typ.Kind() == reflect.Int64:
			field.Kind = KindInt
		case typ.Kind() == reflect.Bool:
			field.Kind = KindBool
		case typ.Kind() == reflect.String:
			field.Kind = KindString
		}
		out = append(out, field)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
