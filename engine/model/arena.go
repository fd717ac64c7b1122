package model

// Arena hands out zeroed float32 buffers from one reusable slab, so a training step does not allocate its
// hundreds of megabytes of activations afresh each time. Reset recycles everything; buffers handed out
// before a Reset must not be used after it. Not safe for concurrent use.
type Arena struct {
	slab []float32
	off  int
	need int // high-water mark of the last cycle, to size the next slab
}

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
	a.need += n
	if a.off+n > len(a.slab) {
		// Out of room this cycle: fall back to the heap; the next Reset grows the slab to fit.
		return make([]float32, n)
	}
	b := a.slab[a.off : a.off+n : a.off+n]
	a.off += n
	return b
}

// Reset makes the whole slab available again, growing it to the previous cycle's total need.
func (a *Arena) Reset() {
	if a.need > len(a.slab) {
		a.slab = make([]float32, a.need)
	}
	a.off, a.need = 0, 0
}

// Bytes is the size of the slab.
func (a *Arena) Bytes() int64 { return int64(len(a.slab)) * 4 }
