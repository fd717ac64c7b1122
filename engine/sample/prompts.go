package sample

import (
	"container/list"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/trainyard/trainyard/engine/model"
)

// promptCache keeps the prefilled KV cache and last-position logits of recent prompts, per adapter, so a
// request whose prompt (and adapter) was prefilled a moment ago starts decoding from a copy instead of
// prefilling it again: the rollouts of an RL group share their prompt, and arrive a few at a time. It is
// bounded in bytes and evicts the least recently used prompt; a prompt larger than a quarter of the bound
// is not kept. Safe for concurrent use (the batcher's loop is its only user today).
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

// promptKey names a prompt under an adapter: the adapter's identity (adapters are immutable while served)
// and a hash of the tokens; entries also keep the tokens, compared on every hit.
type promptKey struct {
	lora *model.LoRA
	hash uint64
}

type promptEntry struct {
	key    promptKey
	prompt []int
	cache  *model.Cache // exactly the prompt's positions
	logits []float32
	bytes  int64
}

var promptSeed = maphash.MakeSeed()

func keyOf(lora *model.LoRA, prompt []int) promptKey {
	var h maphash.Hash
	h.SetSeed(promptSeed)
	var buf [8]byte
	for _, t := range prompt {
		for i := range buf {
			buf[i] = byte(uint64(t) >> (8 * i))
		}
		h.Write(buf[:])
	}
	return promptKey{lora, h.Sum64()}
}

func newPromptCache(limit int64) *promptCache {
	return &promptCache{limit: limit, order: list.New(), byKey: map[promptKey]*list.Element{}}
}

// get returns the entry of prompt under key, or nil.
func (c *promptCache) get(key promptKey, prompt []int) *promptEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	e := el.Value.(*promptEntry)
	if !slices.Equal(e.prompt, prompt) {
		return nil
	}
	c.order.MoveToFront(el)
	return e
}

// put keeps a compact copy of a freshly prefilled cache (holding exactly prompt) and its logits.
func (c *promptCache) put(key promptKey, prompt []int, cache *model.Cache, logits []float32) {
	bytes := cache.Bytes() + int64(len(logits))*4 + int64(len(prompt))*8
	if bytes > c.limit/4 {
		return
	}
	e := &promptEntry{key: key, prompt: slices.Clone(prompt), cache: cache.Compact(), logits: slices.Clone(logits), bytes: bytes}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byKey[key]; ok {
		c.size -= old.Value.(*promptEntry).bytes
		c.order.Remove(old)
	}
	c.byKey[key] = c.order.PushFront(e)
	c.size += bytes
	for c.size > c.limit {
		last := c.order.Back()
		old := last.Value.(*promptEntry)
		c.order.Remove(last)
		delete(c.byKey, old.key)
		c.size -= old.bytes
	}
}
