package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
)

// TestScanNamesSnapshotsByPath: every directory holding config.json under the models directory is a base
// model named by its relative path; a snapshot the engine cannot load is skipped with the file and field
// that stop it; hidden directories are not searched.
func TestScanNamesSnapshotsByPath(t *testing.T) {
	root := t.TempDir()
	hfsnapshot.WriteQwen3Snapshot(t, filepath.Join(root, "Qwen", "Qwen3-tiny"), hfsnapshot.TinyQwen3, 1)
	bad := filepath.Join(root, "acme", "mamba")
	hfsnapshot.WriteQwen3Snapshot(t, bad, hfsnapshot.TinyQwen3, 2)
	cfg, _ := os.ReadFile(filepath.Join(bad, "config.json"))
	var m map[string]any
	_ = json.Unmarshal(cfg, &m)
	m["model_type"] = "mamba"
	cfg, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(bad, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".cache", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".cache", "x", "config.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}

	c := New(nil)
	skipped, err := c.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	var se *engine.SnapshotError
	if len(skipped) != 1 || skipped[0].Name != "acme/mamba" || !errors.As(skipped[0].Err, &se) ||
		se.Field != "model_type" || !strings.HasSuffix(se.File, filepath.Join("acme", "mamba", "config.json")) {
		t.Fatalf("skipped %+v", skipped)
	}
	names := c.Names()
	if names[0] != "Qwen/Qwen3-tiny" || !slices.Contains(names, "trainyard/tiny-chat") || slices.Contains(names, "acme/mamba") {
		t.Fatalf("names %v", names)
	}
	if info, ok := c.Info("Qwen/Qwen3-tiny"); !ok || info.Params != hfsnapshot.TinyQwen3.NumParams() {
		t.Fatalf("info %+v", info)
	}
	if _, err := c.Base(context.Background(), "acme/mamba"); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		t.Fatalf("a skipped snapshot: %v", err)
	}
	if skipped, err := New(nil).Scan(filepath.Join(root, "missing")); err != nil || skipped != nil {
		t.Fatalf("missing models directory: %v %v", skipped, err)
	}
}

// TestOneCopyPerProcess: the worker and the chat service of one process ask the same catalog, each many
// times at once; the snapshot is loaded once and every caller holds the same Base.
func TestOneCopyPerProcess(t *testing.T) {
	root := t.TempDir()
	hfsnapshot.WriteQwen3Snapshot(t, filepath.Join(root, "Qwen", "Qwen3-tiny"), hfsnapshot.TinyQwen3, 1)
	c := New(nil)
	if _, err := c.Scan(root); err != nil {
		t.Fatal(err)
	}
	var opens atomic.Int32
	c.open = func(name, dir string) (*engine.Base, error) {
		opens.Add(1)
		return openDir(name, dir)
	}
	var worker, serving = c.Base, c.Base // what app wires into activities and serving.Config.OpenBase
	got := make([]*engine.Base, 16)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			open := worker
			if i%2 == 1 {
				open = serving
			}
			b, err := open(context.Background(), "Qwen/Qwen3-tiny")
			if err != nil {
				t.Error(err)
			}
			got[i] = b
		}()
	}
	wg.Wait()
	if opens.Load() != 1 {
		t.Fatalf("%d loads, want 1", opens.Load())
	}
	for _, b := range got {
		if b == nil || b != got[0] {
			t.Fatalf("callers hold different copies")
		}
	}
	if got[0].Name() != "Qwen/Qwen3-tiny" {
		t.Fatalf("name %q", got[0].Name())
	}
	if _, err := c.Base(context.Background(), "nope/nope"); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		t.Fatalf("unknown: %v", err)
	}
}
