package serving

import (
	"fmt"
	"slices"
	"sync"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// bases opens each served base model once, on first use, and shares it: a Base is safe for concurrent
// sampling with any adapters, and its weights are the largest thing in memory. Each base also has the
// batching sampler of its adapter-less requests and, built on the first constrained request, the
// vocabulary trie its grammars walk.
type bases struct {
	names []string
	open  func(name string) (*engine.Base, error)

	mu     sync.Mutex
	loaded map[string]*baseSlot
}

type baseSlot struct {
	once    sync.Once
	base    *engine.Base
	sampler *engine.Sampler
	err     error

	vocabOnce sync.Once
	vocab     *grammarVocab
}

// grammarVocab returns the base's vocabulary for grammars, built on first use: sorting and linking a
// 150k-token vocabulary takes a moment and some MB that requests without a constraint never need.
func (s *baseSlot) grammarVocab() *grammarVocab {
	s.vocabOnce.Do(func() { s.vocab = vocabOf(s.base) })
	return s.vocab
}

func newBases(names []string, open func(string) (*engine.Base, error)) *bases {
	return &bases{names: names, open: open, loaded: map[string]*baseSlot{}}
}

func (b *bases) has(name string) bool { return slices.Contains(b.names, name) }

// get returns the slot of the opened base model, with its sampler. A name this server does not serve —
// e.g. a model row created with a base model that was later removed from the configuration — is ENOTFOUND.
func (b *bases) get(name string) (*baseSlot, error) {
	if !b.has(name) {
		return nil, trainyard.Errorf(trainyard.ENOTFOUND, "The base model `%s` is not served here (available: %v).", name, b.names)
	}
	b.mu.Lock()
	slot, ok := b.loaded[name]
	if !ok {
		slot = &baseSlot{}
		b.loaded[name] = slot
	}
	b.mu.Unlock()
	slot.once.Do(func() {
		if slot.base, slot.err = b.open(name); slot.err == nil {
			slot.sampler, slot.err = slot.base.NewSampler(nil)
		}
		if slot.err != nil {
			slot.err = fmt.Errorf("open base model %s: %w", name, slot.err)
		}
	})
	if slot.err != nil {
		return nil, slot.err
	}
	return slot, nil
}
