package model

import (
	"context"
	"math"
	"math/rand"
	"testing"
)

// TestCausalBlocks: attention by blocks of query rows (causalBlocks, each stopping at its last row's
// position) computes the logits and the LoRA gradients that the whole T × T square did, for every
// architecture (sliding windows and soft-capping included), with blocks of 16 rows over sequences of 3 to
// 70 tokens (one to four blocks, uneven ones too). Only the sums' order may differ.
func TestCausalBlocks(t *testing.T) {
	defer func(b int) { attnBlock = b }(attnBlock)
	rng := rand.New(rand.NewSource(9))
	var seqs [][]int
	for _, n := range []int{70, 3, 41, 17} {
		s := make([]int, n)
		for i := range s {
			s[i] = rng.Intn(tinyConfig().VocabSize)
		}
		seqs = append(seqs, s)
	}
	for name, cfg := range archConfigs() {
		cfg.MaxSeqLen = 128
		w := randomModel(t, cfg, 5)
		lora := randomLoRA(t, cfg, 3, 6, 0, rng)
		run := func(block int) ([]float32, []float32) {
			attnBlock = block
			return allRowsLossGrads(t, w, seqs, PassOptions{LoRA: lora, Keep: true}, cfg)
		}
		wantL, wantG := run(1 << 30)
		gotL, gotG := run(16)
		closeScaled(t, name+": logit (by blocks, over the square)", gotL, wantL, 1e-5)
		closeScaled(t, name+": LoRA gradient (by blocks, over the square)", gotG, wantG, 1e-5)
	}
}

// allRowsLossGrads runs a training pass of w over seqs and returns headLossGrads of all its rows.
func allRowsLossGrads(t *testing.T, w *Weights, seqs [][]int, opt PassOptions, cfg Config) (logits, grads []float32) {
	t.Helper()
	p, err := w.Forward(context.Background(), seqs, opt)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]int, p.Rows())
	for i := range rows {
		rows[i] = i
	}
	return headLossGrads(t, p, rows, opt.LoRA, cfg)
}

// headLossGrads returns the logits of p's rows and the gradients of lora from a fixed loss on them (logit
// gradients sin(i)/rows), back-propagated through p.
func headLossGrads(t *testing.T, p *Pass, rows []int, lora *LoRA, cfg Config) (logits, grads []float32) {
	t.Helper()
	logits = append([]float32(nil), p.Logits(rows)...)
	dl := make([]float32, len(logits))
	for i := range dl {
		dl[i] = float32(math.Sin(float64(i))) / float32(len(rows))
	}
	g := lora.ZeroLike()
	if err := p.Backward(context.Background(), rows, dl, Grads{L: g}); err != nil {
		t.Fatal(err)
	}
	for _, ts := range g.Tensors(cfg) {
		grads = append(grads, ts.Data...)
	}
	return logits, grads
}

// closeScaled fails unless got has want's length and every value is within tol times want's largest
// magnitude, and none is NaN.
func closeScaled(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*scale || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestCausalBlocksCoverTheRows(t *testing.T) {
	for _, T := range []int{1, 2, 31, 64, 95, 96, 128, 226, 1000} {
		b := causalBlocks(T)
		if b[0][0] != 0 || b[len(b)-1][1] != T {
			t.Fatalf("T=%d: blocks %v do not span [0, T)", T, b)
		}
		for i := 1; i < len(b); i++ {
			if b[i][0] != b[i-1][1] || b[i][1] <= b[i][0] {
				t.Fatalf("T=%d: blocks %v are not consecutive and non-empty", T, b)
			}
		}
	}
}

// TestAttentionBands: the attention's products with their bands (attnBand: the scores a query row does not
// see and the zero weights past its position left out) give the logits and LoRA gradients of the whole
// products bit for bit, at widths that reach the blocked kernels (SmolLM2-135M's heads, 3 to a key/value
// head; Gemma 3's with a sliding window of 40 positions and soft-capped scores, 4 to one), over sequences
// of 3 to 128 tokens, two of them after a shared prefix of 50, in blocks of 128 query rows and of 48.
func TestAttentionBands(t *testing.T) {
	defer func(b bool, n int) { attnBands, attnBlock = b, n }(attnBands, attnBlock)
	smol := smolLM2
	smol.Layers, smol.VocabSize = 2, 64
	gemma := tinyGemma3(true)
	gemma.Dim, gemma.Hidden, gemma.Heads, gemma.HeadDim, gemma.SlidingWindow, gemma.VocabSize = 64, 96, 4, 64, 40, 64
	rng := rand.New(rand.NewSource(4))
	var seqs [][]int
	for _, n := range []int{50, 100, 70, 128, 3} {
		s := make([]int, n)
		for i := range s {
			s[i] = rng.Intn(64)
		}
		seqs = append(seqs, s)
	}
	prefix := []int{-1, 0, 0, -1, -1}
	for name, cfg := range map[string]Config{"smollm2": smol, "gemma3": gemma} {
		cfg.MaxSeqLen = 256
		w := randomModel(t, cfg, 5)
		opt := PassOptions{LoRA: randomLoRA(t, cfg, 4, 8, 0, rng), Keep: true, Prefix: prefix}
		for _, attnBlock = range []int{128, 48} {
			attnBands = false
			wantL, wantG := allRowsLossGrads(t, w, seqs, opt, cfg)
			attnBands = true
			gotL, gotG := allRowsLossGrads(t, w, seqs, opt, cfg)
			if !slicesEqual(gotL, wantL) || !slicesEqual(gotG, wantG) {
				t.Fatalf("%s, blocks of %d: the logits or LoRA gradients with bands differ from those without", name, attnBlock)
			}
		}
	}
}
