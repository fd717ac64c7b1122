package sample

import (
	"container/list"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/trainyard/trainyard/engine/model"
)

// promptCache keeps the prefilled KV cache and last-position logits of recent prompts, per adapter, as
// vLLM's automatic prefix caching does: a request whose prompt (with its adapter) was prefilled a moment
// ago starts decoding from a copy, and one that shares a start with a kept prompt — the system prompt and
// tool definitions an agent sends in every rollout — copies that start and prefills only the rest. Starts
// are matched in blocks of promptBlock tokens. The cache is bounded in bytes and evicts the least recently
// used prompt; a prompt larger than a quarter of the bound is not kept. Safe for concurrent use.
type promptCache struct {
	limit int64

	mu    sync.Mutex
	size  int64
	order *list.List // of *promptEntry, most recent first
	byKey map[promptKey]*list.Element
}

// promptCacheBytes bounds a batcher's prompt cache: 256 MiB holds the KV of about 5,000 prompt tokens at
// SmolLM2-135M's shape (46 KB a token) or 10,000 at Qwen2.5-0.5B's.
const promptCacheBytes = 256 << 20

// promptBlock is the granularity of shared starts: a kept prompt is found by each of its first n tokens
// for n a multiple of promptBlock (and by all of them).
const promptBlock = 16

// promptKey names the first n tokens of a prompt under an adapter: the adapter's identity (adapters are
// immutable while served), n, and a hash of the tokens. A hit is confirmed by comparing the tokens.
type promptKey struct {
	lora *model.LoRA
	n    int
	hash uint64
}

type promptEntry struct {
	prompt []int
	cache  *model.Cache // exactly the prompt's positions
	logits []float32    // of its last position
	keys   []promptKey
	bytes  int64
}

var promptSeed = maphash.MakeSeed()

// prefixKeys returns the keys of prompt's first n tokens for every multiple n of promptBlock up to its
// length, and of the whole prompt last.
func prefixKeys(lora *model.LoRA, prompt []int) []promptKey {
	var h maphash.Hash
	h.SetSeed(promptSeed)
	keys := make([]promptKey, 0, len(prompt)/promptBlock+1)
	var buf [8]byte
	for i, t := range prompt {
		for j := range buf {
			buf[j] = byte(uint64(t) >> (8 * j))
		}
		h.Write(buf[:])
		if n := i + 1; n%promptBlock == 0 && n < len(prompt) {
			keys = append(keys, promptKey{lora, n, h.Sum64()})
		}
	}
	return append(keys, promptKey{lora, len(prompt), h.Sum64()})
}

func newPromptCache(limit int64) *promptCache {
	return &promptCache{limit: limit, order: list.New(), byKey: map[promptKey]*list.Element{}}
}

// lookup returns the kept prompt that shares the longest start with prompt under lora, and the length n of
// that start: n == len(prompt) when the whole prompt is kept (its logits then serve too), otherwise a
// multiple of promptBlock shorter than the prompt, so at least one token is left to prefill. It returns
// nil when no block is shared.
func (c *promptCache) lookup(lora *model.LoRA, prompt []int) (*promptEntry, int) {
	keys := prefixKeys(lora, prompt)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		el, ok := c.byKey[k]
		if !ok {
			continue
		}
		e := el.Value.(*promptEntry)
		whole := k.n == len(prompt)
		if whole && !slices.Equal(e.prompt, prompt) || len(e.prompt) < k.n || !slices.Equal(e.prompt[:k.n], prompt[:k.n]) {
			continue
		}
		c.order.MoveToFront(el)
		return e, k.n
	}
	return nil, 0
}

// put keeps a compact copy of a freshly prefilled cache (holding exactly prompt) and its logits, found by
// the whole prompt and by each of its block-aligned starts, and returns that copy (nil when the prompt is
// too large to keep): its positions are its own, so other caches can share all of them (Cache.Rebase).
func (c *promptCache) put(lora *model.LoRA, prompt []int, cache *model.Cache, logits []float32) *model.Cache {
	bytes := cache.Bytes() + int64(len(logits))*4 + int64(len(prompt))*8
	if bytes > c.limit/4 {
		return nil
	}
	e := &promptEntry{prompt: slices.Clone(prompt), cache: cache.Compact(), logits: slices.Clone(logits),
		keys: prefixKeys(lora, prompt), bytes: bytes}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byKey[e.keys[len(e.keys)-1]]; ok && slices.Equal(old.Value.(*promptEntry).prompt, prompt) {
		c.remove(old)
	}
	el := c.order.PushFront(e)
	for _, k := range e.keys {
		c.byKey[k] = el // a start shared with an older prompt now finds the newer one
	}
	c.size += bytes
	for c.size > c.limit {
		c.remove(c.order.Back())
	}
	return e.cache
}

// remove forgets an entry and the keys that still find it.
func (c *promptCache) remove(el *list.Element) {
	e := el.Value.(*promptEntry)
	c.order.Remove(el)
	for _, k := range e.keys {
		if c.byKey[k] == el {
			delete(c.byKey, k)
		}
	}
	c.size -= e.bytes
}
