package model

import "github.com/trainyard/trainyard/engine/linalg"

// Pack lays out the bfloat16 matrices that batched products multiply by — the seven projections of every
// layer and the LM head — for the blocked kernel, once per process (Mat.packed): training steps and chat's
// decoding batches then widen contiguous panels instead of transposing the frozen weights on every product.
// It adds about their bfloat16 size again to the weights' memory (PackedBytes). The weights must not change
// afterwards; float32 weights (pretraining, full gradients) are left as they are.
func (w *Weights) Pack() {
	for l := range w.Layers {
		for m := range w.Layers[l].W {
			w.Layers[l].W[m].pack()
		}
	}
	w.Output.pack()
}

// packedBytes is the memory Pack added.
func (w *Weights) packedBytes() int64 {
	var n int64
	add := func(m *Mat) {
		if m.packed != nil {
			n += m.packed.Bytes()
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

// PackedBytes is the memory Weights.Pack adds to bfloat16 weights for cfg, as estimated before loading them.
func PackedBytes(c Config) int64 {
	nr := int64(linalg.PackedPanelRows(c.VocabSize))
	n := int64(c.VocabSize+int(nr)-1) / nr * nr * int64(c.Dim)
	for m := 0; m < NumModules; m++ {
		o, i := c.Shape(m)
		nr := int64(linalg.PackedPanelRows(o))
		n += int64(c.Layers) * ((int64(o) + nr - 1) / nr * nr) * int64(i)
	}
	return 2 * n
}
