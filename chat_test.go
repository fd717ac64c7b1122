package trainyard

import (
	"encoding/json"
	"testing"
)

func TestContentJSON(t *testing.T) {
	for _, tc := range []struct {
		in, text, out string
		null          bool
	}{
		{in: `"hi"`, text: "hi", out: `"hi"`},
		{in: `null`, null: true, out: `null`},
		{in: `[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]`, text: "ab",
			out: `[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]`},
	} {
		var c Content
		if err := json.Unmarshal([]byte(tc.in), &c); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if c.Text() != tc.text || c.Null != tc.null {
			t.Errorf("%s: text %q null %v", tc.in, c.Text(), c.Null)
		}
		b, err := json.Marshal(c)
		if err != nil || string(b) != tc.out {
			t.Errorf("%s: marshal = %s, %v; want %s", tc.in, b, err, tc.out)
		}
	}
	var c Content
	if err := json.Unmarshal([]byte(`42`), &c); err == nil {
		t.Error("a number is not a content")
	}
}

func TestMessageOrChoice(t *testing.T) {
	raw := `[{"role":"user","content":"What is 2+3?"},
	 {"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"5"},
	  "logprobs":{"content":[{"token":"token_id:53","logprob":-0.1,"bytes":[53],"top_logprobs":[]}]}},
	 {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]`
	var items []MessageOrChoice
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || items[0].Message == nil || items[1].Choice == nil || items[2].Message == nil {
		t.Fatalf("wrong kinds: %+v", items)
	}
	ch := items[1].Choice
	if ch.Message.Content.Text() != "5" || ch.Logprobs == nil || ch.Logprobs.Content[0].Token != "token_id:53" {
		t.Fatalf("choice decoded wrong: %+v", ch)
	}
	if items[2].Message.ToolCalls[0].Function.Name != "f" || !items[2].Message.Content.Null {
		t.Fatalf("tool call message decoded wrong: %+v", items[2].Message)
	}
	b, err := json.Marshal(items[1])
	if err != nil {
		t.Fatal(err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil || !IsChoiceObject(probe) {
		t.Fatalf("a marshalled Choice must still be recognised as one: %s", b)
	}
}
