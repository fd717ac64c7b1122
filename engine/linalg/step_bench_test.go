package linalg

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// stepConfig is the model whose training step BenchmarkTrainingStep replays: trainyard/tiny-chat
// (engine/pretrain), full-weight training on a 4096-token batch of 16 sequences of 256 tokens.
var stepConfig = struct{ dim, hidden, heads, headDim, layers, vocab, tokens, seqLen int }{
	dim: 256, hidden: 704, heads: 4, headDim: 64, layers: 4, vocab: 266, tokens: 4096, seqLen: 256,
}

// gemmCall is one Sgemm of the replayed step, with its operands.
type gemmCall struct {
	tA, tB        bool
	m, n, k       int
	lda, ldb, ldc int
	beta          float32
}

// loraRank is the adapter rank of the replayed LoRA step (the README's "LoRA r=16" rows; DefaultLoRAConfig
// is rank 8).
const loraRank = 16

// stepCalls lists the products of one training step in the order the engine issues them, except attention,
// which the engine runs per (sequence, head) from its own goroutines and which is listed separately. With
// lora, the base weights are frozen (no weight gradients) and every projection carries a rank-16 adapter:
// u = x·Aᵀ, y += s·u·Bᵀ forward; dB += dyᵀ·u, du = dy·B, dA += duᵀ·x, dx += du·A backward.
func stepCalls(lora bool) (dense, attention []gemmCall) {
	c := stepConfig
	N, D, H, r := c.tokens, c.dim, c.hidden, loraRank
	linear := [][2]int{{D, D}, {D, D}, {D, D}, {D, D}, {H, D}, {H, D}, {D, H}} // (out, in) of q,k,v,o,gate,up,down
	for range c.layers {
		for _, s := range linear { // forward y = x·Wᵀ
			out, in := s[0], s[1]
			dense = append(dense, gemmCall{false, true, N, out, in, in, in, out, 0})
			if lora {
				dense = append(dense, gemmCall{false, true, N, r, in, in, in, r, 0},
					gemmCall{false, true, N, out, r, r, r, out, 1})
			}
		}
		for _, s := range linear { // backward dx = dy·W, and dW += dyᵀ·x or the adapter's gradients
			out, in := s[0], s[1]
			dense = append(dense, gemmCall{false, false, N, in, out, out, in, in, 1})
			if !lora {
				dense = append(dense, gemmCall{true, false, out, in, N, out, in, in, 1})
				continue
			}
			dense = append(dense, gemmCall{true, false, out, r, N, out, r, r, 1},
				gemmCall{false, false, N, r, out, out, r, r, 0},
				gemmCall{true, false, r, in, N, r, in, in, 1},
				gemmCall{false, false, N, in, r, r, in, in, 1})
		}
	}
	V := c.vocab
	dense = append(dense, gemmCall{false, true, N, V, D, D, D, V, 0}, // logits
		gemmCall{false, false, N, D, V, V, D, D, 0}) // dh
	if !lora {
		dense = append(dense, gemmCall{true, false, V, D, N, V, D, D, 1}) // dW of the output head
	}
	T, hd, qd := c.seqLen, c.headDim, c.heads*c.headDim
	for range c.layers {
		attention = append(attention,
			gemmCall{false, true, T, T, hd, qd, qd, T, 0},  // scores Q·Kᵀ
			gemmCall{false, false, T, hd, T, T, qd, qd, 0}, // P·V
			gemmCall{false, true, T, T, hd, qd, qd, T, 0},  // dP = dO·Vᵀ
			gemmCall{false, false, T, hd, T, T, qd, qd, 0}, // dQ = dP·K
			gemmCall{true, false, T, hd, T, T, qd, qd, 1},  // dK += dPᵀ·Q
			gemmCall{true, false, T, hd, T, T, qd, qd, 1})  // dV += Pᵀ·dO
	}
	return dense, attention
}

func (g gemmCall) flops() float64 { return 2 * float64(g.m) * float64(g.n) * float64(g.k) }

// BenchmarkTrainingStep replays every matrix product of one tiny-chat training step through Sgemm and reports
// the step's matmul throughput in GFLOP/s, the figure to compare with BenchmarkOpenBLASCeiling: "full" trains
// all weights (pretraining), "lora" trains rank-16 adapters on frozen weights (the service's jobs).
func BenchmarkTrainingStep(b *testing.B) {
	for _, lora := range []bool{false, true} {
		name := "full"
		if lora {
			name = "lora"
		}
		b.Run(Backend()+"/"+name, func(b *testing.B) { benchStep(b, lora) })
	}
}

func benchStep(b *testing.B, lora bool) {
	dense, attention := stepCalls(lora)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := randSlice(rng, stepConfig.tokens*stepConfig.hidden*2) // large enough for every operand
	var flops float64
	for _, g := range dense {
		flops += g.flops()
	}
	seqs := stepConfig.tokens / stepConfig.seqLen
	units := seqs * stepConfig.heads
	for _, g := range attention {
		flops += g.flops() * float64(units)
	}
	workers := runtime.GOMAXPROCS(0)
	outs := make([][]float32, workers)
	for w := range outs {
		outs[w] = make([]float32, stepConfig.tokens*stepConfig.hidden)
	}
	cpu0 := processCPU()
	for b.Loop() {
		for _, g := range dense {
			Sgemm(g.tA, g.tB, g.m, g.n, g.k, 1, buf, g.lda, buf, g.ldb, g.beta, outs[0], g.ldc)
		}
		// Attention: the engine's own goroutines each take (sequence, head) units.
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for u := w; u < units; u += workers {
					for _, g := range attention {
						Sgemm(g.tA, g.tB, g.m, g.n, g.k, 1, buf, g.lda, buf, g.ldb, g.beta, outs[w], g.ldc)
					}
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}
