package hf

import "math/bits"

// mergeTable maps a pair of ids (pairKey) to its merge: an open-addressing hash table with linear probing,
// at most three quarters full, in place of a Go map. Filling a map with Gemma's 514,906 merges was a quarter of its
// load, every insert a cache miss somewhere in 20 MB; the table is filled in the order of the entries' home
// slots instead, front to back. Looking pairs up is the inner loop of merging, and most adjacent pairs have
// no merge: a miss ends at the first empty slot, usually in the same cache line.
type mergeTable struct {
	slots []mergeSlot
	shift uint8 // 64 - log2(len(slots)): a key's home slot is the top bits of its hash
}

// mergeSlot is one entry; id holds the merged token's id plus one, so that zeroed memory is empty.
type mergeSlot struct {
	key      uint64
	rank, id int32
}

// mergeEntry is one merge rule before it is entered.
type mergeEntry struct {
	key      uint64
	rank, id int32
}

func (t *mergeTable) home(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

// newMergeTable builds the table of entries. A pair listed twice keeps its last rank, as the reference's
// map does.
func newMergeTable(entries []mergeEntry) mergeTable {
	size := 16
	for 4*len(entries) > 3*size {
		size *= 2
	}
	logSize := bits.TrailingZeros(uint(size))
	t := mergeTable{slots: make([]mergeSlot, size), shift: uint8(64 - logSize)}
	// A counting sort on the top bits of the home slots orders the inserts front to back.
	bucketBits := min(16, logSize)
	drop := uint(logSize - bucketBits)
	starts := make([]int32, 1<<bucketBits+1)
	for _, e := range entries {
		starts[t.home(e.key)>>drop+1]++
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	ordered := make([]mergeEntry, len(entries))
	for _, e := range entries {
		b := t.home(e.key) >> drop
		ordered[starts[b]] = e
		starts[b]++
	}
	for _, e := range ordered {
		t.put(e)
	}
	return t
}

func (t *mergeTable) put(e mergeEntry) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(e.key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			*s = mergeSlot{key: e.key, rank: e.rank, id: e.id + 1}
			return
		}
		if s.key == e.key {
			if e.rank > s.rank {
				s.rank, s.id = e.rank, e.id+1
			}
			return
		}
	}
}

// get returns the merge of key.
func (t *mergeTable) get(key uint64) (mergeTo, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return mergeTo{}, false
		}
		if s.key == key {
			return mergeTo{rank: s.rank, id: s.id - 1}, true
		}
	}
}
