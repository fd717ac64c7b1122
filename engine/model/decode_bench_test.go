package model

import (
	"context"
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/linalg"
)

// BenchmarkDecodeRollouts times one decoding step of B sequences, as chat serves RL rollouts, at
// SmolLM2-135M's body with Qwen3's 151,936-token vocabulary (the head is then the largest matrix) on a
// bfloat16 base, each sequence 96 positions in, with float32 products (on the row-major weights, and on the
// weights packed as the service holds them) and, on an avx512_bf16 CPU, with bfloat16 dot products. It reports the step's time and the bytes of weights and the flops the step needs,
// so the step can be set against the machine's limits.
//
//	go test -run '^$' -bench DecodeRollouts -benchtime 20x ./engine/model/
func BenchmarkDecodeRollouts(b *testing.B) {
	cfg := smolLM2
	cfg.VocabSize = 151936
	w32, err := NewWeights(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w32.Init(1)
	w, packed := w32.ToBF16(), w32.ToBF16()
	packed.Pack() // as the service holds a base
	var pairs *Weights
	if linalg.Pairs() { // as the service holds a base where the pair products take its batches
		linalg.SetBF16Dot(true)
		linalg.SetBF16Train(true)
		pairs = w32.ToBF16()
		pairs.Pack()
		linalg.SetBF16Train(false)
	}
	w32 = nil
	rng := rand.New(rand.NewSource(1))
	dots := []bool{false}
	if linalg.SetBF16Dot(true) {
		dots = append(dots, true)
	}
	defer linalg.SetBF16Dot(false) // as TestMain leaves it
	for _, dot := range dots {
		for _, batch := range []int{1, 8, 32, 64} {
			name := fmt.Sprintf("f32/%d", batch)
			if dot {
				name = fmt.Sprintf("bf16dot/%d", batch)
			}
			linalg.SetBF16Dot(dot)
			benchDecodeStep(b, name, w, cfg, batch, rng)
			if dot && pairs != nil {
				benchDecodeStep(b, fmt.Sprintf("pairs/%d", batch), pairs, cfg, batch, rng)
			}
			if !dot {
				benchDecodeStep(b, fmt.Sprintf("packed/%d", batch), packed, cfg, batch, rng)
			}
		}
	}
}

func benchDecodeStep(b *testing.B, name string, w *Weights, cfg Config, batch int, rng *rand.Rand) {
	ctx := context.Background()
	{
		b.Run(name, func(b *testing.B) {
			caches := make([]*Cache, batch)
			toks := make([]int, batch)
			prompt := make([]int, 96)
			for i := range prompt {
				prompt[i] = rng.Intn(cfg.VocabSize)
			}
			first := w.NewCache(96)
			if _, err := w.Prefill(ctx, first, prompt, nil); err != nil {
				b.Fatal(err)
			}
			for i := range caches {
				caches[i] = w.NewCache(96 + 256)
				caches[i].CopyPrefix(first, first.Len)
				toks[i] = rng.Intn(cfg.VocabSize)
			}
			b.ResetTimer()
			cpu := processCPU()
			for i := 0; i < b.N; i++ {
				if caches[0].Len == caches[0].cap {
					b.StopTimer()
					for j := range caches {
						caches[j] = w.NewCache(96 + 256)
						caches[j].CopyPrefix(first, first.Len)
					}
					b.StartTimer()
				}
				if _, err := w.Decode(ctx, caches, toks, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
			// CPU time says what the step costs on a machine shared with other work (run with GOMAXPROCS=1).
			b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/step")
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(w.Bytes())/1e6, "weights-MB")
			b.ReportMetric(2*float64(cfg.NumParams())*float64(batch)/1e9, "GFLOP/step")
		})
	}
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
