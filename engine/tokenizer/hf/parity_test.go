package hf

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fixture is one file of testdata/fixtures, written by testdata/gen/gen.mjs from the reference.
type fixture struct {
	Tokenizer   string                     `json:"tokenizer"`
	SHA256      string                     `json:"tokenizer_sha256"`
	Reference   string                     `json:"reference"`
	Patch       map[string]json.RawMessage `json:"patch"`
	CrossChecks map[string]struct {
		Version string `json:"version"`
		Agree   int    `json:"agree"`
	} `json:"cross_checks"`
	Cases []struct {
		Text    string  `json:"text"`
		IDs     []int   `json:"ids"`     // encode(text, add_special_tokens=False)
		Plain   []int   `json:"plain"`   // the same with no added tokens at all
		Decoded *string `json:"decoded"` // decode(ids) when it differs from text (normalization)
	} `json:"cases"`
}

func readFixture(t *testing.T, name string) *fixture {
	var f fixture
	if err := json.Unmarshal(readGz(t, "testdata/fixtures/"+name+".json.gz"), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) < 2000 {
		t.Fatalf("%s: only %d cases", name, len(f.Cases))
	}
	return &f
}

// TestParity holds the tokenizer to the reference ids on every fixture string: EncodeSpecial against
// encode(text, add_special_tokens=False), Encode against the same tokenizer without added tokens, and
// Decode against decode(ids).
func TestParity(t *testing.T) {
	for _, tc := range []struct{ fixture, dir string }{
		{"qwen3", qwen3Dir},
		{"llama3", llama3Dir},
		{"smollm2-pipeline", qwen3Dir},
		{"gpt2-prefix-nfkc", qwen3Dir},
		{"split-behaviours", qwen3Dir},
		{"llama2", llama2Dir},
		{"gemma3", gemma3Dir},
		{"metaspace-first", llama2Dir},
		{"metaspace-always-unk", llama2Dir},
		{"metaspace-never-nofuse", llama2Dir},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			f := readFixture(t, tc.fixture)
			files := files(t, tc.dir)
			if got := sha256Hex(files.tok); got != f.SHA256 {
				t.Fatalf("%s/tokenizer.json has sha256 %s, the fixture was made from %s (%s)", tc.dir, got, f.SHA256, f.Tokenizer)
			}
			tk := loadDir(t, tc.dir)
			if f.Patch != nil {
				var err error
				if tk, err = New(patched(t, files.tok, f.Patch), files.cfg); err != nil {
					t.Fatal(err)
				}
			}
			var bad []string
			report := func(i int, what string, got, want any) {
				if len(bad) < 8 {
					bad = append(bad, fmt.Sprintf("case %d %q: %s\n got %v\nwant %v", i, trunc(f.Cases[i].Text), what, got, want))
				}
			}
			fails := 0
			for i, c := range f.Cases {
				ok := true
				if got := tk.EncodeSpecial(c.Text); !slices.Equal(got, c.IDs) {
					report(i, "EncodeSpecial", got, c.IDs)
					ok = false
				}
				if got := tk.Encode(c.Text); !slices.Equal(got, c.Plain) {
					report(i, "Encode", got, c.Plain)
					ok = false
				}
				want := c.Text
				if c.Decoded != nil {
					want = *c.Decoded
				}
				if got := tk.Decode(c.IDs); got != want {
					report(i, "Decode", got, want)
					ok = false
				}
				if !ok {
					fails++
				}
			}
			t.Logf("%s: %d/%d strings identical to %s", tc.fixture, len(f.Cases)-fails, len(f.Cases), f.Reference)
			if fails > 0 {
				t.Errorf("%d of %d strings differ:\n%s", fails, len(f.Cases), strings.Join(bad, "\n"))
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
