package hftemplate

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestSnippets renders the small templates of testdata/snippets.py, which exercise what this package adds
// to gonja (Python string methods, tojson, dict order, strftime_now, range, trim, generation), and
// compares them with python3-jinja2's renderings.
func TestSnippets(t *testing.T) {
	var snippets []struct {
		Template string                     `json:"template"`
		Context  map[string]json.RawMessage `json:"context"`
		Output   *string                    `json:"output"`
		Error    string                     `json:"error"`
	}
	readJSON(t, "testdata/expected/snippets.json", &snippets)
	for _, s := range snippets {
		tpl, err := New(s.Template, Options{Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Errorf("%q: %v", s.Template, err)
			continue
		}
		kwargs := map[string]any{}
		for k, v := range s.Context {
			kwargs[k] = v
		}
		got, err := tpl.Render(Request{Kwargs: kwargs})
		switch {
		case s.Output == nil && err == nil:
			t.Errorf("%q: the reference failed (%s), we rendered %q", s.Template, s.Error, got)
		case s.Output == nil && !errors.Is(err, ErrTemplate):
			t.Errorf("%q: error %v is not ErrTemplate", s.Template, err)
		case s.Output == nil:
		case err != nil:
			t.Errorf("%q: %v", s.Template, err)
		case got != *s.Output:
			t.Errorf("%q\n got %q\nwant %q", s.Template, got, *s.Output)
		}
	}
}
