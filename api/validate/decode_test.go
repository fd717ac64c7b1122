package validate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The expected messages and positions are what CPython's json.loads (3.12,
// the C scanner) raises for the same input.
func TestDecodeSyntaxErrorsMatchPython(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in  string
		msg string
		pos int
	}{
		{``, "Expecting value", 0},
		{`   `, "Expecting value", 3},
		{`{`, "Expecting property name enclosed in double quotes", 1},
		{`{"a"`, "Expecting ':' delimiter", 4},
		{`{"a" 1}`, "Expecting ':' delimiter", 5},
		{`{"a":`, "Expecting value", 5},
		{`{"a":1`, "Expecting ',' delimiter", 6},
		{`{"a":1 "b":2}`, "Expecting ',' delimiter", 7},
		{`{"a":1,}`, "Expecting property name enclosed in double quotes", 7},
		{`[1,]`, "Expecting value", 3},
		{`[1`, "Expecting ',' delimiter", 2},
		{`[1 2]`, "Expecting ',' delimiter", 3},
		{`[1.]`, "Expecting ',' delimiter", 2},
		{`{} x`, "Extra data", 3},
		{`01`, "Extra data", 1},
		{`-`, "Expecting value", 0},
		{`tru`, "Expecting value", 0},
		{`NaN`, "Expecting value", 0},
		{`[Infinity]`, "Expecting value", 1},
		{`"abc`, "Unterminated string starting at", 0},
		{`["a", "b`, "Unterminated string starting at", 6},
		{"{\"a\":\"b\x01\"}", "Invalid control character at", 7},
		{`"\q"`, `Invalid \escape`, 1},
		{`"\u12"`, `Invalid \uXXXX escape`, 2},
		{`"\u12G4"`, `Invalid \uXXXX escape`, 2},
		{`"é" x`, "Extra data", 4}, // a character offset, not a byte offset
		{"{'a': 1}", "Expecting property name enclosed in double quotes", 1},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%q) = %v, want a SyntaxError", c.in, err)
			continue
		}
		if se.Msg != c.msg || se.Pos != c.pos {
			t.Errorf("Decode(%q) = %q at %d, want %q at %d", c.in, se.Msg, se.Pos, c.msg, c.pos)
		}
	}
}

func TestDecodeValues(t *testing.T) {
	t.Parallel()
	in := "\xEF\xBB\xBF" + ` {"b": [1, 2.50, -3e2, true, false, null], "a": "x\u00e9\ud83d\ude00\n", "b": {"z": 1}, "c": {}} `
	v, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if got := strings.Join(o.Keys(), ","); got != "b,a,c" {
		t.Errorf("keys = %s, want b,a,c (first position, last value, as a Python dict)", got)
	}
	if s, _ := o.Get("a"); s != "xé😀\n" {
		t.Errorf("a = %q", s)
	}
	b, _ := o.Get("b")
	if string(b.(*Object).Raw()) != `{"z": 1}` {
		t.Errorf("raw of b = %s", b.(*Object).Raw())
	}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":{"z":1},"a":"xé😀\n","c":{}}`; string(out) != want {
		t.Errorf("re-encoded = %s, want %s", out, want)
	}
	arr, _ := Decode([]byte(`[1, 2.50, -3e2, 0]`))
	out, _ = json.Marshal(arr)
	if string(out) != `[1,2.50,-3e2,0]` {
		t.Errorf("numbers re-encoded = %s (must keep their source text)", out)
	}
}

func TestDecodeLargeObjectUsesIndex(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `": ` + "1")
	}
	b.WriteString(`, "kaa": 2}`)
	v, err := Decode([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if o.Len() != 100 {
		t.Fatalf("len = %d, want 100", o.Len())
	}
	if x, _ := o.Get("kaa"); x != Number("2") {
		t.Errorf("kaa = %v, want the last value 2", x)
	}
}

func TestDecodeRejectsBadEncodingAndDeepNesting(t *testing.T) {
	t.Parallel()
	if _, err := Decode([]byte("{\"a\": \"\xff\"}")); !errors.Is(err, ErrEncoding) {
		t.Errorf("invalid UTF-8: err = %v, want ErrEncoding", err)
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	var se *SyntaxError
	if _, err := Decode([]byte(deep)); !errors.As(err, &se) || !strings.Contains(se.Msg, "depth") {
		t.Errorf("deep nesting: err = %v", err)
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Decode([]byte(ok)); err != nil {
		t.Errorf("nesting at the limit: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud800"`, `[1e400]`, `{"a":1,}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode again to JSON Go accepts.
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("re-encoded invalid JSON %s", out)
		}
	})
}
