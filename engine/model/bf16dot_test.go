package model

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/trainyard/trainyard/engine/linalg"
)

// TestMain runs the package's tests with bfloat16 dot products off: the tests compare decoding with the
// float32 forward pass to float rounding, and TestBF16DotLogits alone measures what the dot products change.
func TestMain(m *testing.M) {
	linalg.SetBF16Dot(false)
	os.Exit(m.Run())
}

// TestBF16DotLogits states the cost of bfloat16 dot products in inference (linalg.SgemmBF16Infer on an
// avx512_bf16 CPU): a decoding step of 8 sequences on a bfloat16 base at SmolLM2-135M's shape (vocabulary cut
// to 4,096 to keep the test short), with and without them. The activations' rounding to bfloat16 (2⁻⁹
// relative) moved the logits and log-probabilities by at most 0.0072 here (logged); the bound asserted is
// 0.05.
func TestBF16DotLogits(t *testing.T) {
	if !linalg.SetBF16Dot(true) {
		t.Skip("no avx512_bf16")
	}
	defer linalg.SetBF16Dot(false)
	cfg := smolLM2
	cfg.VocabSize, cfg.Layers = 4096, 8
	w32, err := NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w32.Init(3)
	w := w32.ToBF16()
	ctx := context.Background()
	const batch = 8
	logits := func(dot bool) []float32 {
		linalg.SetBF16Dot(dot)
		caches := make([]*Cache, batch)
		toks := make([]int, batch)
		for i := range caches {
			caches[i] = w.NewCache(64)
			prompt := []int{1 + i, 20 + i, 300 + i, 4000 - i}
			if _, err := w.Prefill(ctx, caches[i], prompt, nil); err != nil {
				t.Fatal(err)
			}
			toks[i] = 7 * i
		}
		out, err := w.Decode(ctx, caches, toks, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	dot, exact := logits(true), logits(false)
	var maxLogit, maxLogprob float64
	V := cfg.VocabSize
	for b := range batch {
		lseD, lseE := logSumExp(dot[b*V:(b+1)*V]), logSumExp(exact[b*V:(b+1)*V])
		for j := range V {
			d, e := float64(dot[b*V+j]), float64(exact[b*V+j])
			maxLogit = max(maxLogit, math.Abs(d-e))
			maxLogprob = max(maxLogprob, math.Abs((d-lseD)-(e-lseE)))
		}
	}
	t.Logf("bfloat16 dot products: max |Δlogit| %.4f, max |Δlogprob| %.4f over %d×%d logits", maxLogit, maxLogprob, batch, V)
	if maxLogit > 0.05 || maxLogprob > 0.05 {
		t.Fatalf("bfloat16 dot products moved a logit by %.4f and a logprob by %.4f, past 0.05", maxLogit, maxLogprob)
	}
	if maxLogit == 0 {
		t.Fatal("bfloat16 dot products changed nothing: the path was not taken")
	}
}

func logSumExp(x []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}
