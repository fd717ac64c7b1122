package validate

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// errorsJSON renders the collected errors as the API would send them.
func errorsJSON(t *testing.T, e *Errors) string {
	t.Helper()
	b, err := json.Marshal(e.List())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each case is one field checked by a typed accessor; want is the error list
// pydantic v2 (lax mode, as FastAPI runs it) produces for that input.
func TestAccessorsReportPydanticErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		body  string
		check func(o Obj)
		want  string
	}{
		{"missing", `{}`, func(o Obj) { o.Field("x").String() },
			`[{"type":"missing","loc":["body","x"],"msg":"Field required","input":{}}]`},
		{"optional absent", `{}`, func(o Obj) { o.Field("x").Optional().String() }, `null`},
		{"nullable null", `{"x":null}`, func(o Obj) { o.Field("x").Nullable().String() }, `null`},
		{"string type", `{"x":1}`, func(o Obj) { o.Field("x").String() },
			`[{"type":"string_type","loc":["body","x"],"msg":"Input should be a valid string","input":1}]`},
		{"null not allowed", `{"x":null}`, func(o Obj) { o.Field("x").Float() },
			`[{"type":"float_type","loc":["body","x"],"msg":"Input should be a valid number","input":null}]`},
		{"float parsing", `{"x":"abc"}`, func(o Obj) { o.Field("x").Float() },
			`[{"type":"float_parsing","loc":["body","x"],"msg":"Input should be a valid number, unable to parse string as a number","input":"abc"}]`},
		{"float lax string ok", `{"x":" 1.5 "}`, func(o Obj) {
			if v, ok := o.Field("x").Float(); !ok || v != 1.5 {
				panic("want 1.5")
			}
		}, `null`},
		{"float strict string", `{"x":"1.5"}`, func(o Obj) { o.Field("x").Strict().Float() },
			`[{"type":"float_type","loc":["body","x"],"msg":"Input should be a valid number","input":"1.5"}]`},
		{"float infinite", `{"x":1e999}`, func(o Obj) { o.Field("x").Float() },
			`[{"type":"finite_number","loc":["body","x"],"msg":"Input should be a finite number","input":"1e999"}]`},
		{"int parsing", `{"x":"1.5"}`, func(o Obj) { o.Field("x").Int() },
			`[{"type":"int_parsing","loc":["body","x"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"1.5"}]`},
		{"int from float", `{"x":1.5}`, func(o Obj) { o.Field("x").Int() },
			`[{"type":"int_from_float","loc":["body","x"],"msg":"Input should be a valid integer, got a number with a fractional part","input":1.5}]`},
		{"int lax whole float ok", `{"x":3.0}`, func(o Obj) {
			if v, ok := o.Field("x").Int(); !ok || v != 3 {
				panic("want 3")
			}
		}, `null`},
		{"int strict whole float", `{"x":3.0}`, func(o Obj) { o.Field("x").Strict().Int() },
			`[{"type":"int_type","loc":["body","x"],"msg":"Input should be a valid integer","input":3.0}]`},
		{"int too big", `{"x":123456789012345678901234567890}`, func(o Obj) { o.Field("x").Int() },
			`[{"type":"int_parsing_size","loc":["body","x"],"msg":"Unable to parse input string as an integer, exceeded maximum size","input":123456789012345678901234567890}]`},
		{"int list", `{"x":[1]}`, func(o Obj) { o.Field("x").Int() },
			`[{"type":"int_type","loc":["body","x"],"msg":"Input should be a valid integer","input":[1]}]`},
		{"bool parsing", `{"x":"maybe"}`, func(o Obj) { o.Field("x").Bool() },
			`[{"type":"bool_parsing","loc":["body","x"],"msg":"Input should be a valid boolean, unable to interpret input","input":"maybe"}]`},
		{"bool lax yes", `{"x":"YES"}`, func(o Obj) {
			if v, ok := o.Field("x").Bool(); !ok || !v {
				panic("want true")
			}
		}, `null`},
		{"bool type", `{"x":{}}`, func(o Obj) { o.Field("x").Bool() },
			`[{"type":"bool_type","loc":["body","x"],"msg":"Input should be a valid boolean","input":{}}]`},
		{"list type", `{"x":{"a":1}}`, func(o Obj) { o.Field("x").List() },
			`[{"type":"list_type","loc":["body","x"],"msg":"Input should be a valid list","input":{"a":1}}]`},
		{"dict type", `{"x":[]}`, func(o Obj) { o.Field("x").Dict() },
			`[{"type":"dict_type","loc":["body","x"],"msg":"Input should be a valid dictionary","input":[]}]`},
		{"model type", `{"x":"s"}`, func(o Obj) { o.Field("x").Model() },
			`[{"type":"model_attributes_type","loc":["body","x"],"msg":"Input should be a valid dictionary or object to extract fields from","input":"s"}]`},
		{"nested missing under a failed model is not reported", `{"x":"s"}`, func(o Obj) {
			m, _ := o.Field("x").Model()
			m.Field("y").String()
		}, `[{"type":"model_attributes_type","loc":["body","x"],"msg":"Input should be a valid dictionary or object to extract fields from","input":"s"}]`},
		{"list items", `{"x":[1,"a",2.5]}`, func(o Obj) {
			items, _ := o.Field("x").List()
			for _, it := range items {
				it.Int()
			}
		}, `[{"type":"int_parsing","loc":["body","x",1],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"a"},` +
			`{"type":"int_from_float","loc":["body","x",2],"msg":"Input should be a valid integer, got a number with a fractional part","input":2.5}]`},
		{"too long", `{"x":[1,2,3]}`, func(o Obj) { o.Field("x").List(MaxItems(2)) },
			`[{"type":"too_long","loc":["body","x"],"msg":"List should have at most 2 items after validation, not 3","input":[1,2,3],"ctx":{"actual_length":3,"field_type":"List","max_length":2}}]`},
		{"too short", `{"x":[]}`, func(o Obj) { o.Field("x").List(MinItems(1)) },
			`[{"type":"too_short","loc":["body","x"],"msg":"List should have at least 1 item after validation, not 0","input":[],"ctx":{"actual_length":0,"field_type":"List","min_length":1}}]`},
		{"ge", `{"x":0}`, func(o Obj) { o.Field("x").Int(Ge(1), Le(100)) },
			`[{"type":"greater_than_equal","loc":["body","x"],"msg":"Input should be greater than or equal to 1","input":0,"ctx":{"ge":1}}]`},
		{"le float", `{"x":2}`, func(o Obj) { o.Field("x").Float(Le(1.0)) },
			`[{"type":"less_than_equal","loc":["body","x"],"msg":"Input should be less than or equal to 1.0","input":2,"ctx":{"le":1}}]`},
		{"string too short", `{"x":""}`, func(o Obj) { o.Field("x").String(MinLen(1)) },
			`[{"type":"string_too_short","loc":["body","x"],"msg":"String should have at least 1 character","input":"","ctx":{"min_length":1}}]`},
		{"string too long", `{"x":"abé"}`, func(o Obj) { o.Field("x").String(MaxLen(2)) },
			`[{"type":"string_too_long","loc":["body","x"],"msg":"String should have at most 2 characters","input":"abé","ctx":{"max_length":2}}]`},
		{"pattern", `{"x":"a/b"}`, func(o Obj) { o.Field("x").String(Pattern(`^[a-z]+$`)) },
			`[{"type":"string_pattern_mismatch","loc":["body","x"],"msg":"String should match pattern '^[a-z]+$'","input":"a/b","ctx":{"pattern":"^[a-z]+$"}}]`},
		{"enum", `{"x":"up"}`, func(o Obj) { o.Field("x").Enum("asc", "desc") },
			`[{"type":"literal_error","loc":["body","x"],"msg":"Input should be 'asc' or 'desc'","input":"up","ctx":{"expected":"'asc' or 'desc'"}}]`},
		{"enum of three", `{"x":1}`, func(o Obj) { o.Field("x").Enum("a", "b", "c") },
			`[{"type":"literal_error","loc":["body","x"],"msg":"Input should be 'a', 'b' or 'c'","input":1,"ctx":{"expected":"'a', 'b' or 'c'"}}]`},
		{"uuid length", `{"x":"abc"}`, func(o Obj) { o.Field("x").UUID() },
			`[{"type":"uuid_parsing","loc":["body","x"],"msg":"Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3","input":"abc","ctx":{"error":"invalid length: expected length 32 for simple format, found 3"}}]`},
		{"uuid character", `{"x":"zz"}`, func(o Obj) { o.Field("x").UUID() },
			"[{\"type\":\"uuid_parsing\",\"loc\":[\"body\",\"x\"],\"msg\":\"Input should be a valid UUID, invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `z` at 1\",\"input\":\"zz\",\"ctx\":{\"error\":\"invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `z` at 1\"}}]"},
		{"uuid type", `{"x":5}`, func(o Obj) { o.Field("x").UUID() },
			`[{"type":"uuid_type","loc":["body","x"],"msg":"UUID input should be a string, bytes or UUID object","input":5}]`},
		{"union", `{"x":"high"}`, func(o Obj) { o.Field("x").AnyOf(KindFloat, KindInt, KindBool) },
			`[{"type":"float_parsing","loc":["body","x","float"],"msg":"Input should be a valid number, unable to parse string as a number","input":"high"},` +
				`{"type":"int_parsing","loc":["body","x","int"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"high"},` +
				`{"type":"bool_parsing","loc":["body","x","bool"],"msg":"Input should be a valid boolean, unable to interpret input","input":"high"}]`},
		{"union lax ok", `{"x":"true"}`, func(o Obj) {
			if v, ok := o.Field("x").AnyOf(KindFloat, KindInt, KindBool); !ok || v != true {
				panic("want true")
			}
		}, `null`},
		{"custom value error", `{"x":"a"}`, func(o Obj) { o.Field("x").Invalid("not allowed") },
			`[{"type":"value_error","loc":["body","x"],"msg":"Value error, not allowed","input":"a","ctx":{"error":"not allowed"}}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var errs Errors
			o, ok := errs.At(decode(t, c.body), "body").Model()
			if !ok {
				t.Fatal("body is not an object")
			}
			c.check(o)
			if got := errorsJSON(t, &errs); got != c.want {
				t.Errorf("errors\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestUnionExactMatchWins(t *testing.T) {
	t.Parallel()
	var errs Errors
	o, _ := errs.At(decode(t, `{"i":3,"f":2.5,"s":"x","b":false}`), "body").Model()
	got := []any{}
	for _, k := range []string{"i", "f", "s", "b"} {
		v, ok := o.Field(k).AnyOf(KindFloat, KindInt, KindStr, KindBool)
		if !ok {
			t.Fatalf("%s rejected", k)
		}
		got = append(got, v)
	}
	if want := []any{3, 2.5, "x", false}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestQueryTakesLastValueAndReportsStringInput(t *testing.T) {
	t.Parallel()
	var errs Errors
	q := url.Values{"limit": {"5", "0"}}
	errs.Query(q, "limit").Int(Ge(1))
	errs.Query(q, "order").Optional().Enum("asc", "desc")
	want := `[{"type":"greater_than_equal","loc":["query","limit"],"msg":"Input should be greater than or equal to 1","input":"0","ctx":{"ge":1}}]`
	if got := errorsJSON(t, &errs); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if _, ok := errs.Query(q, "missing").Optional().Int(); ok {
		t.Error("absent optional parameter reported ok")
	}
}

func TestErrorsAreCapped(t *testing.T) {
	t.Parallel()
	var errs Errors
	root := errs.At([]any{}, "body")
	for i := 0; i < MaxErrors+5; i++ {
		root.Fail("x", "y", nil)
	}
	if len(errs.List()) != MaxErrors || errs.Len() != MaxErrors+5 {
		t.Errorf("listed %d, counted %d", len(errs.List()), errs.Len())
	}
	ve := errs.Err().(*ValidationError)
	if ve.Dropped != 5 {
		t.Errorf("dropped = %d, want 5", ve.Dropped)
	}
}

func TestLocationsDoNotAlias(t *testing.T) {
	t.Parallel()
	var errs Errors
	o, _ := errs.At(decode(t, `{"a":[{"b":1},{"b":2}]}`), "body").Model()
	items, _ := o.Field("a").List()
	for _, it := range items {
		m, _ := it.Model()
		m.Field("c").String()
	}
	got := errorsJSON(t, &errs)
	want := `[{"type":"missing","loc":["body","a",0,"c"],"msg":"Field required","input":{"b":1}},{"type":"missing","loc":["body","a",1,"c"],"msg":"Field required","input":{"b":2}}]`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
