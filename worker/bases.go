package worker

import (
	"context"
	"sync"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// Bases opens base models on first use and keeps them for the life of the
// worker: the engine's built-in models by name, and model directories
// (config.json + safetensors) under the names in Dirs. A Base is immutable
// and safe for concurrent use, so every job on a base shares one copy.
type Bases struct {
	// Dirs maps extra base model names to directories for engine.OpenDir.
	Dirs map[string]string

	mu    sync.Mutex
	bases map[string]*baseSlot
}

type baseSlot struct {
	once sync.Once
	base *engine.Base
	err  error
}

// Base returns the named base model; ENOTFOUND when it is neither built in
// nor in Dirs. Concurrent first calls load it once.
func (b *Bases) Base(_ context.Context, name string) (*engine.Base, error) {
	dir, isDir := b.Dirs[name]
	if !isDir && !isBuiltin(name) {
		return nil, trainyard.Errorf(trainyard.ENOTFOUND, "base model %q is not available", name)
	}
	b.mu.Lock()
	if b.bases == nil {
		b.bases = map[string]*baseSlot{}
	}
	slot, ok := b.bases[name]
	if !ok {
		slot = &baseSlot{}
		b.bases[name] = slot
	}
	b.mu.Unlock()
	slot.once.Do(func() {
		if isDir {
			slot.base, slot.err = engine.OpenDir(dir)
		} else {
			slot.base, slot.err = engine.OpenBuiltin(name)
		}
	})
	return slot.base, slot.err
}

func isBuiltin(name string) bool {
	for _, n := range engine.BuiltinNames() {
		if n == name {
			return true
		}
	}
	return false
}
