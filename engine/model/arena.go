package model

import "github.com/trainyard/trainyard/internal/prefault"

// Arena hands out float32 buffers from reusable blocks, so a training step does not allocate its hundreds of
// megabytes of activations afresh each time. Reset recycles everything; buffers handed out before a Reset
// must not be used after it. Not safe for concurrent use.
//
// Memory comes in blocks that are kept for the arena's lifetime: a cycle that needs more than the last one
// appends blocks instead of replacing a slab, so growing never leaves a slab's worth of garbage behind
// (with a multi-gigabyte live heap of weights, Go's collector would let that garbage stand for a long
// time, and the process's peak memory would be the old slab plus the new one).
type Arena struct {
	blocks [][]float32
	cur    int // block being carved
	off    int // next free float in blocks[cur]
	used   int // floats handed out since the last Reset
}

// A new block is a quarter of what the arena holds (so the last block's unused part stays a small share),
// at least minBlock floats (256 KiB, so a small model's arena stays small) and at most maxBlock (64 MiB); a
// larger request gets a block of its own size.
const minBlock, maxBlock = 1 << 16, 16 << 20

// alloc returns a zeroed buffer of n floats.
func (a *Arena) alloc(n int) []float32 {
	b := a.dirty(n)
	clear(b)
	return b
}

// dirty returns a buffer of n floats with arbitrary contents, for outputs that are fully overwritten.
func (a *Arena) dirty(n int) []float32 {
	if a == nil {
		return make([]float32, n)
	}
	a.used += n
	for a.cur < len(a.blocks) {
		if b := a.blocks[a.cur]; a.off+n <= len(b) {
			a.off += n
			return b[a.off-n : a.off : a.off]
		}
		// The same sequence of requests lands in the same blocks every cycle, so skipping a block's
		// tail wastes at most one request's worth per block.
		a.cur, a.off = a.cur+1, 0
	}
	total := 0
	for _, b := range a.blocks {
		total += len(b)
	}
	blk := make([]float32, max(n, min(maxBlock, max(total/4, minBlock))))
	prefault.Slice(blk) // one system call instead of a page fault per 4 KiB as the pass first writes it
	a.blocks = append(a.blocks, blk)
	a.cur, a.off = len(a.blocks)-1, n
	return a.blocks[a.cur][:n:n]
}

// Reset makes every block available again (a nil arena: nothing to do).
func (a *Arena) Reset() {
	if a != nil {
		a.cur, a.off, a.used = 0, 0, 0
	}
}

// Used is the memory handed out since the last Reset.
func (a *Arena) Used() int64 { return int64(a.used) * 4 }

// Bytes is the memory the arena holds.
func (a *Arena) Bytes() int64 {
	var n int64
	for _, b := range a.blocks {
		n += int64(len(b)) * 4
	}
	return n
}
