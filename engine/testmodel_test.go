package engine

import (
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// tinyBase returns a small randomly initialised base model (fast enough for training tests).
func tinyBase(t testing.TB, seed int64) *Base {
	t.Helper()
	cfg := model.Config{VocabSize: tokenizer.VocabSize, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		Hidden: 128, MaxSeqLen: 128, RopeTheta: 10000, NormEps: 1e-5, TiedEmbeddings: true}
	w, err := model.NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Init(seed)
	// Scale the random weights up: a wide logit range and attention that mixes positions, so LoRA alone
	// can fit data quickly (a freshly initialised model passes almost nothing between positions).
	for _, ts := range w.Tensors() {
		if len(ts.Shape) == 2 {
			for i := range ts.Data {
				ts.Data[i] *= 5
			}
		}
	}
	b, err := byteLevelBase("test/tiny", w)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func baseBits(b *Base) []uint32 {
	var out []uint32
	for _, t := range b.w.Tensors() {
		for _, v := range t.Data {
			out = append(out, mathBits(v))
		}
	}
	return out
}

func adapterBits(a *Adapter) []uint32 {
	var out []uint32
	for _, p := range adapterParams(a) {
		for _, v := range p {
			out = append(out, mathBits(v))
		}
	}
	return out
}

func equalBits(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
