package model

import (
	"runtime"

	"github.com/trainyard/trainyard/engine/linalg"
)

// Pack lays out the bfloat16 matrices that batched products multiply by — the seven projections of every
// layer and the LM head — for the blocked kernel, once per process (Mat.packed): training steps and chat's
// decoding batches then widen contiguous panels instead of transposing the frozen weights on every product.
// Where the packed products serve every row count (linalg.PackedReplacesRowMajor: the panel tiles of AVX2
// and AVX-512, no bfloat16 dot products on) and where the pair products take every batched product (AMX
// tiles, VDPBF16PS where it pays), the packed matrices replace the row-major ones (a tied embedding then
// reads its rows from the packed head), so the weights take the same memory up to panel padding; elsewhere
// (dot products on without the pair products taking the batches) both are held (PackedBytes). The weights
// must not change afterwards; float32 weights (pretraining, full gradients) are left as they are.
func (w *Weights) Pack() {
	// Each replaced row-major matrix is garbage once packed. Collecting every 64 MiB of it lets the next
	// matrices reuse that memory, so that packing a base adds about 64 MiB to the peak, not a second base
	// (the collector would otherwise wait for the heap to double). The heap is a few large arrays without
	// pointers, so a collection costs little against packing.
	var garbage int64
	dropped := false
	pack := func(m *Mat) {
		before := len(m.BF16)
		m.pack()
		if m.BF16 == nil && before > 0 {
			garbage += 2 * int64(before)
			dropped = true
		}
		if garbage >= 64<<20 {
			runtime.GC()
			garbage = 0
		}
	}
	for l := range w.Layers {
		ly := &w.Layers[l]
		for m := range ly.W {
			pack(&ly.W[m])
		}
		fuse := func(f **linalg.PackedPairs, parts ...int) {
			if *f != nil {
				return // fused by an earlier Pack
			}
			ps := make([]*linalg.PackedPairs, len(parts))
			for i, m := range parts {
				ps[i] = ly.W[m].pairs
			}
			if *f = linalg.FusePairs(ps...); *f != nil {
				garbage += (*f).Bytes() // the parts' own allocations, which the fused one replaced
			}
		}
		fuse(&ly.qkv, qkvModules...)
		fuse(&ly.gateUp, gateUpModules...)
	}
	if w.Cfg.TiedEmbeddings {
		pack(&w.Output)
		w.Embed = w.Output // the embedding reads its rows from the packed head, and the row-major one can go
	} else {
		pack(&w.Output)
	}
	if dropped {
		runtime.GC() // the rest, and a tied head's row-major copy, which Embed held until now
	}
	w.noRowMajor = w.Output.BF16 == nil
	for l := range w.Layers {
		for m := range w.Layers[l].W {
			w.noRowMajor = w.noRowMajor && w.Layers[l].W[m].BF16 == nil
		}
	}
}

// PackedBytes is the memory the packed layouts take (what Pack allocated).
func (w *Weights) PackedBytes() int64 {
	var n int64
	add := func(m *Mat) {
		if m.packed != nil {
			n += m.packed.Bytes()
		}
		if m.pairs != nil {
			n += m.pairs.Bytes()
		}
	}
	for l := range w.Layers {
		for m := range w.Layers[l].W {
			add(&w.Layers[l].W[m])
		}
	}
	add(&w.Output)
	return n
}

// PackedBytes is the memory Weights.Pack adds to bfloat16 weights for cfg (its panels, less the row-major
// matrices they replace), as estimated before loading them.
func PackedBytes(c Config) int64 {
	added := func(rows, cols int) int64 {
		if linalg.PairsServeBatches() && linalg.PacksPairs(rows, cols) {
			return linalg.PackedPairsBytes(rows, cols) - 2*int64(rows)*int64(cols) // the only copy
		}
		n := linalg.PackedBF16Bytes(rows, cols)
		if linalg.PackedReplacesRowMajor(rows) {
			n -= 2 * int64(rows) * int64(cols)
		}
		return n
	}
	n := added(c.VocabSize, c.Dim) // the head (a tied embedding is the same matrix, counted once either way)
	for m := 0; m < NumModules; m++ {
		o, i := c.Shape(m)
		n += int64(c.Layers) * added(o, i)
	}
	return n
}
