package train

import (
	"math/rand"
	"runtime"
	"testing"
)

// BenchmarkHeadChunk is the softmax work of one chunk of the LM head in an RL step at Qwen3's vocabulary
// (220 rows of 151,936 logits): Stats, then LogprobGrad, over the whole chunk ("chunk") or a row per worker
// at a time ("by-workers", as the engine's head runs them), so that LogprobGrad reads each row from the
// cache Stats left it in.
func BenchmarkHeadChunk(b *testing.B) {
	const rows, V = 220, 151936
	rng := rand.New(rand.NewSource(1))
	src := make([]float32, rows*V)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 2)
	}
	targets, coef := make([]int, rows), make([]float64, rows)
	for i := range targets {
		targets[i], coef[i] = rng.Intn(V), rng.NormFloat64()
	}
	logits := make([]float32, len(src))
	b.Run("by-workers", func(b *testing.B) {
		sub := runtime.GOMAXPROCS(0)
		for b.Loop() {
			b.StopTimer()
			copy(logits, src)
			b.StartTimer()
			for r0 := 0; r0 < rows; r0 += sub {
				r1 := min(r0+sub, rows)
				part := logits[r0*V : r1*V]
				st := Stats(part, V, targets[r0:r1])
				LogprobGrad(part, V, targets[r0:r1], coef[r0:r1], st.LogSum)
			}
		}
	})
	b.Run("chunk", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			copy(logits, src)
			b.StartTimer()
			st := Stats(logits, V, targets)
			LogprobGrad(logits, V, targets, coef, st.LogSum)
		}
	})
}
