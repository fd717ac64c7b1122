// Package catalog is a process's one registry of base models: the engine's built-in models, the model
// directories named in the configuration, and the Hugging Face snapshots found under a models directory.
// Each base model is loaded on first use, once, and shared by everything in the process that trains or
// serves it (a Base is immutable and safe for concurrent use), so `trainyard serve` holds one copy of each
// base model whether its worker or its chat service asked first.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// Catalog maps base model names to their source and loads them lazily. Its methods are safe for concurrent
// use; Scan belongs to start-up, before the catalog is shared.
type Catalog struct {
	dirs  map[string]string // name → model directory
	infos map[string]engine.SnapshotInfo
	open  func(name, dir string) (*engine.Base, error)

	mu    sync.Mutex
	slots map[string]*slot
}

type slot struct {
	once sync.Once
	base *engine.Base
	err  error
}

// New returns a catalog of the built-in models plus dirs (base model name → model directory, as given in
// TRAINYARD_BASE_MODELS).
func New(dirs map[string]string) *Catalog {
	c := &Catalog{dirs: map[string]string{}, infos: map[string]engine.SnapshotInfo{}, open: openDir,
		slots: map[string]*slot{}}
	for name, dir := range dirs {
		c.dirs[name] = dir
	}
	return c
}

func openDir(name, dir string) (*engine.Base, error) { return engine.OpenSnapshot(name, dir) }

// Skipped is a snapshot Scan left out, with why (an *engine.SnapshotError naming the file and field when
// the engine cannot load it).
type Skipped struct {
	Name string
	Err  error
}

// Scan adds every snapshot under root as a base model named by its path relative to root with forward
// slashes (root/Qwen/Qwen3-0.6B is "Qwen/Qwen3-0.6B"). A snapshot is a directory holding config.json;
// directories below one are not searched, nor hidden ones (.cache). Each snapshot is inspected without
// loading its weights; one the engine cannot load is skipped and reported. A missing root is an empty
// models directory. A name already given a directory in New keeps it.
func (c *Catalog) Scan(root string) ([]Skipped, error) {
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var skipped []Skipped
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if rel == "." {
			name = filepath.Base(root)
		}
		if _, taken := c.dirs[name]; taken || isBuiltin(name) {
			return filepath.SkipDir
		}
		info, err := engine.InspectSnapshot(path)
		if err != nil {
			skipped = append(skipped, Skipped{Name: name, Err: err})
			return filepath.SkipDir
		}
		c.dirs[name], c.infos[name] = path, info
		return filepath.SkipDir
	})
	if err != nil {
		return skipped, fmt.Errorf("models directory %s: %w", root, err)
	}
	return skipped, nil
}

// Names lists every base model: the model directories (sorted), then the built-in models.
func (c *Catalog) Names() []string {
	names := make([]string, 0, len(c.dirs))
	for n := range c.dirs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range engine.BuiltinNames() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Has reports whether name is a base model of the catalog.
func (c *Catalog) Has(name string) bool {
	_, ok := c.dirs[name]
	return ok || isBuiltin(name)
}

// Dir returns the directory of a model given as one ("" for a built-in model).
func (c *Catalog) Dir(name string) string { return c.dirs[name] }

// Info returns what Scan read of a snapshot found under the models directory.
func (c *Catalog) Info(name string) (engine.SnapshotInfo, bool) {
	info, ok := c.infos[name]
	return info, ok
}

// Base returns the named base model, loading it on the first call; concurrent first calls load it once and
// every caller gets the same *engine.Base. A name the catalog does not know is ENOTFOUND.
func (c *Catalog) Base(_ context.Context, name string) (*engine.Base, error) {
	dir, isDir := c.dirs[name]
	if !isDir && !isBuiltin(name) {
		return nil, trainyard.Errorf(trainyard.ENOTFOUND, "base model %q is not available", name)
	}
	c.mu.Lock()
	s, ok := c.slots[name]
	if !ok {
		s = &slot{}
		c.slots[name] = s
	}
	c.mu.Unlock()
	s.once.Do(func() {
		if isDir {
			s.base, s.err = c.open(name, dir)
		} else {
			s.base, s.err = engine.OpenBuiltin(name)
		}
		if s.err != nil {
			s.err = fmt.Errorf("open base model %s: %w", name, s.err)
		}
	})
	return s.base, s.err
}

func isBuiltin(name string) bool { return slices.Contains(engine.BuiltinNames(), name) }
