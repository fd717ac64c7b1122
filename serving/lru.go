package serving

import (
	"container/list"
	"context"
	"sync"
)

// lruCache is a byte-bounded LRU cache whose misses load through a single flight: concurrent gets of the
// same missing key run load once and share its result. A value larger than the whole budget is returned
// but not kept. Values that are evicted while a request still uses them stay alive until that request
// ends, so the bound is on what the cache retains, not on peak memory.
type lruCache[K comparable, V any] struct {
	maxBytes int64
	sizeOf   func(V) int64

	mu       sync.Mutex
	bytes    int64
	order    *list.List // front = most recently used; elements hold *lruEntry
	entries  map[K]*list.Element
	inflight map[K]*flight[V]
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

// flight is one load in progress; done is closed when val/err are set.
type flight[V any] struct {
	done chan struct{}
	val  V
	err  error
}

func newLRUCache[K comparable, V any](maxBytes int64, sizeOf func(V) int64) *lruCache[K, V] {
	return &lruCache[K, V]{maxBytes: maxBytes, sizeOf: sizeOf, order: list.New(),
		entries: map[K]*list.Element{}, inflight: map[K]*flight[V]{}}
}

// get returns the cached value of key or loads it. The load runs detached from ctx (a caller that gives up
// must not fail the others waiting on the same flight); the caller itself stops waiting when ctx ends.
// hit reports whether the value came from the cache without waiting for a load.
func (c *lruCache[K, V]) get(ctx context.Context, key K, load func(context.Context) (V, error)) (v V, hit bool, err error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		v = el.Value.(*lruEntry[K, V]).val
		c.mu.Unlock()
		return v, true, nil
	}
	f, ok := c.inflight[key]
	if !ok {
		f = &flight[V]{done: make(chan struct{})}
		c.inflight[key] = f
		go c.run(context.WithoutCancel(ctx), key, f, load)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.val, false, f.err
	case <-ctx.Done():
		return v, false, ctx.Err()
	}
}

func (c *lruCache[K, V]) run(ctx context.Context, key K, f *flight[V], load func(context.Context) (V, error)) {
	f.val, f.err = load(ctx)
	c.mu.Lock()
	delete(c.inflight, key)
	if f.err == nil {
		c.add(key, f.val)
	}
	c.mu.Unlock()
	close(f.done)
}

// add inserts a loaded value and evicts from the back until the budget holds. Called with mu held.
func (c *lruCache[K, V]) add(key K, v V) {
	size := c.sizeOf(v)
	if size > c.maxBytes {
		return
	}
	c.entries[key] = c.order.PushFront(&lruEntry[K, V]{key: key, val: v, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes {
		back := c.order.Back()
		e := back.Value.(*lruEntry[K, V])
		c.order.Remove(back)
		delete(c.entries, e.key)
		c.bytes -= e.size
	}
}
