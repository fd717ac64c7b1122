package model

import (
	"math/rand"
	"strings"

	"github.com/trainyard/trainyard/engine/linalg"
)

// NewRandomWeights returns weights of cfg stored as dtype with matrices drawn from N(0, 0.02), norm gains 1
// (Gemma's offsets 0) and biases 0: a real model's shape, storage and memory without its weights, for benchmarks and memory
// measurements. A bfloat16 model is drawn a row at a time, so it never exists in float32.
func NewRandomWeights(cfg Config, dtype DType, seed int64) (*Weights, error) {
	w, err := newWeights(cfg, dtype)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(seed))
	row := make([]float32, 0, cfg.Dim)
	for _, t := range w.Tensors() {
		switch {
		case len(t.Shape) == 1 && strings.HasSuffix(t.Name, ".bias"):
			clear(t.Data)
		case len(t.Shape) == 1 && cfg.NormPlusOne:
			clear(t.Data) // gains 1 + 0
		case len(t.Shape) == 1:
			for i := range t.Data {
				t.Data[i] = 1
			}
		case t.BF16 != nil:
			cols := t.Shape[1]
			row = append(row[:0], make([]float32, cols)...)
			for r := 0; r < t.Shape[0]; r++ {
				for i := range row {
					row[i] = float32(rng.NormFloat64() * 0.02)
				}
				linalg.RoundBF16(t.BF16[r*cols:(r+1)*cols], row)
			}
		default:
			for i := range t.Data {
				t.Data[i] = float32(rng.NormFloat64() * 0.02)
			}
		}
	}
	return w, nil
}
