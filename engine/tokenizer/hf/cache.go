package hf

import (
	"hash/maphash"
	"strings"
	"sync"
)

// wordCache remembers the ids of pieces already merged: text repeats its words, and merging is the costly
// step. It is sharded to keep concurrent encoders from queueing on one lock, and bounded: a full shard is
// emptied rather than evicted entry by entry, which keeps it simple and lets the cache follow a change of
// vocabulary in the text (code, then prose, then another language).
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

const (
	cacheShards   = 16
	shardCapacity = 4096 // entries per shard: 64 Ki pieces in all, a few MB
	maxCachedLen  = 256  // longer pieces (long runs, blobs) rarely repeat and would bloat the cache
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func newWordCache() wordCache { return wordCache{seed: maphash.MakeSeed()} }

func (c *wordCache) shard(piece string) *cacheShard {
	return &c.shards[maphash.String(c.seed, piece)%cacheShards]
}

func (c *wordCache) get(piece string) ([]int32, bool) {
	if len(piece) > maxCachedLen {
		return nil, false
	}
	s := c.shard(piece)
	s.mu.RLock()
	ids, ok := s.m[piece]
	s.mu.RUnlock()
	return ids, ok
}

// put stores ids, which the cache then owns; piece is copied because it usually points into the caller's text.
func (c *wordCache) put(piece string, ids []int32) {
	if len(piece) > maxCachedLen {
		return
	}
	s := c.shard(piece)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= shardCapacity {
		s.m = make(map[string][]int32, 256)
	}
	s.m[strings.Clone(piece)] = ids
	s.mu.Unlock()
}
