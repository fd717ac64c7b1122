package model

import (
	"context"
	"math"
	"math/rand"
	"testing"
)

func tinyConfig() Config {
	return Config{VocabSize: 23, Dim: 16, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 4, Hidden: 24,
		MaxSeqLen: 16, RopeTheta: 10000, NormEps: 1e-5, TiedEmbeddings: false}
}

// archConfigs are tiny versions of every supported architecture: plain Llama; Llama 3 with its rope scaling
// (head_dim 8 so that the four frequencies fall in the kept, blended and stretched bands) and an explicit
// head_dim; Qwen2 with q/k/v biases and tied embeddings; Qwen3 with q/k norms and head_dim ≠ dim/heads;
// Llama with attention_bias and mlp_bias.
func archConfigs() map[string]Config {
	llama3 := tinyConfig()
	llama3.Arch, llama3.HeadDim, llama3.TiedEmbeddings = "llama", 8, true
	llama3.Rope3 = Llama3Rope{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 8, OrigMaxPos: 256}
	qwen2 := tinyConfig()
	qwen2.Arch, qwen2.TiedEmbeddings = "qwen2", true
	qwen2.Bias[ModQ], qwen2.Bias[ModK], qwen2.Bias[ModV] = true, true, true
	qwen3 := tinyConfig()
	qwen3.Arch, qwen3.HeadDim, qwen3.QKNorm = "qwen3", 8, true
	biased := tinyConfig() // Llama's attention_bias and mlp_bias: every projection has one
	for m := range biased.Bias {
		biased.Bias[m] = true
	}
	return map[string]Config{"llama": tinyConfig(), "llama3": llama3, "qwen2": qwen2, "qwen3": qwen3, "llama-bias": biased,
		"gemma3": tinyGemma3(false), "gemma3-softcap": tinyGemma3(true)}
}

// tinyGemma3 is Gemma 3 in small: one KV head, head_dim 8 ≠ dim/heads, every second layer global, a window
// of 3 positions that testSeqs cross, a linear rope factor on the global layers, an attention scale of its
// own; with softcap, attention scores and logits soft-capped tightly enough to bend them.
func tinyGemma3(softcap bool) Config {
	c := tinyConfig()
	c.Arch, c.HeadDim, c.KVHeads, c.TiedEmbeddings = "gemma3_text", 8, 1, true
	c.QKNorm, c.NormPlusOne, c.SandwichNorm, c.EmbedScale, c.GeluTanh = true, true, true, true, true
	c.QueryScalar, c.SlidingPattern, c.SlidingWindow, c.RopeLocalTheta, c.RopeLinear = 6, 2, 3, 100, 2
	if softcap {
		c.AttnSoftcap, c.FinalSoftcap = 1.5, 2.5
	}
	return c
}

// randomLoRA returns an adapter of the given rank and alpha on all seven projections, its A and B filled from
// rng (non-zero B, so that A receives gradient).
func randomLoRA(t *testing.T, cfg Config, rank int, alpha, dropout float32, rng *rand.Rand) *LoRA {
	t.Helper()
	all := [NumModules]bool{true, true, true, true, true, true, true}
	lora, err := NewLoRA(cfg, rank, alpha, dropout, all, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range lora.Tensors(cfg) {
		for i := range ts.Data {
			ts.Data[i] = float32(rng.NormFloat64() * 0.3)
		}
	}
	return lora
}

// randomModel returns weights with large enough random values that every path carries gradient.
func randomModel(t *testing.T, cfg Config, seed int64) *Weights {
	w, err := NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	for _, ts := range w.Tensors() {
		for i := range ts.Data {
			ts.Data[i] = float32(rng.NormFloat64() * 0.4)
		}
	}
	for _, ly := range w.Layers { // norm gains around 1
		for i := range ly.AttnNorm {
			ly.AttnNorm[i] += 1
			ly.MLPNorm[i] += 1
		}
		for i := range ly.QNorm {
			ly.QNorm[i] += 1
			ly.KNorm[i] += 1
		}
		for i := range ly.PostAttnNorm { // (1 + g) gains around 1.5
			ly.PostAttnNorm[i] += 0.5
			ly.PostMLPNorm[i] += 0.5
		}
	}
	return w
}

var testSeqs = [][]int{{1, 5, 7, 2, 9, 11, 3}, {4, 4, 8, 19, 22}, {6, 0, 13}}

// ceLoss is the mean cross-entropy of predicting every next token, in float64; it returns dLogits too.
func ceLoss(t *testing.T, w *Weights, lora *LoRA, g Grads) float64 {
	t.Helper()
	p, err := w.Forward(context.Background(), testSeqs, PassOptions{LoRA: lora, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	var rows, targets []int
	for s, toks := range testSeqs {
		for i := 0; i+1 < len(toks); i++ {
			rows = append(rows, p.Offsets()[s]+i)
			targets = append(targets, toks[i+1])
		}
	}
	V := w.Cfg.VocabSize
	logits := p.Logits(rows)
	dl := make([]float32, len(logits))
	var loss float64
	for i, tg := range targets {
		row := logits[i*V : (i+1)*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		loss += -(float64(row[tg]) - mx - math.Log(sum))
		for j, v := range row {
			pj := math.Exp(float64(v)-mx) / sum
			if j == tg {
				pj--
			}
			dl[i*V+j] = float32(pj / float64(len(targets)))
		}
	}
	if g.W != nil || g.L != nil {
		if err := p.Backward(context.Background(), rows, dl, g); err != nil {
			t.Fatal(err)
		}
	}
	return loss / float64(len(targets))
}

// checkDirectional compares the analytic gradient with a central finite difference along random
// directions of one tensor; averaging over a whole direction keeps float32 rounding noise small.
func checkDirectional(t *testing.T, name string, param, grad []float32, loss func() float64) {
	t.Helper()
	rng := rand.New(rand.NewSource(int64(len(name))))
	for trial := 0; trial < 3; trial++ {
		dir := make([]float64, len(param))
		var analytic float64
		for i := range dir {
			dir[i] = rng.NormFloat64()
			analytic += dir[i] * float64(grad[i])
		}
		orig := append([]float32(nil), param...)
		const eps = 1e-3
		set := func(sign float64) {
			for i := range param {
				param[i] = orig[i] + float32(sign*eps*dir[i])
			}
		}
		set(1)
		lp := loss()
		set(-1)
		lm := loss()
		copy(param, orig)
		numeric := (lp - lm) / (2 * eps)
		tol := 2e-3 + 2e-2*math.Abs(numeric)
		if math.Abs(numeric-analytic) > tol {
			t.Errorf("%s trial %d: analytic %.6g numeric %.6g", name, trial, analytic, numeric)
		}
	}
}

func TestFullGradients(t *testing.T) {
	for name, base := range archConfigs() {
		for _, tied := range []bool{false, true} {
			cfg := base
			cfg.TiedEmbeddings = tied
			w := randomModel(t, cfg, 1)
			g := w.Clone()
			for _, ts := range g.Tensors() {
				clear(ts.Data)
			}
			ceLoss(t, w, nil, Grads{W: g})
			gt := g.Tensors()
			for i, ts := range w.Tensors() {
				checkDirectional(t, name+" "+ts.Name, ts.Data, gt[i].Data, func() float64 { return ceLoss(t, w, nil, Grads{}) })
			}
		}
	}
}

func TestLoRAGradients(t *testing.T) {
	for name, cfg := range archConfigs() {
		w := randomModel(t, cfg, 2)
		for _, dropout := range []float32{0, 0.3} {
			lora := randomLoRA(t, cfg, 3, 6, dropout, rand.New(rand.NewSource(4)))
			gl := lora.ZeroLike()
			before := w.Clone()
			ceLoss(t, w, lora, Grads{L: gl})
			gt := gl.Tensors(cfg)
			for i, ts := range lora.Tensors(cfg) {
				checkDirectional(t, name+" "+ts.Name, ts.Data, gt[i].Data, func() float64 { return ceLoss(t, w, lora, Grads{}) })
			}
			bt := before.Tensors()
			for i, ts := range w.Tensors() {
				for j := range ts.Data {
					if math.Float32bits(ts.Data[j]) != math.Float32bits(bt[i].Data[j]) {
						t.Fatalf("%s: base tensor %s changed", name, ts.Name)
					}
				}
			}
		}
	}
}

// TestRMSNormApply: the norm's output that backward recomputes from the input and its kept 1/rms is
// rmsNormTo's, bit for bit, with and without Gemma's offset gains: the LoRA gradients read it in place of a
// kept copy.
func TestRMSNormApply(t *testing.T) {
	const rows, dim = 37, 96
	rng := rand.New(rand.NewSource(5))
	x, g := make([]float32, rows*dim), make([]float32, dim)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * 3
	}
	for i := range g {
		g[i] = float32(rng.NormFloat64())
	}
	for _, off := range []float32{0, 1} {
		want, got, r := make([]float32, rows*dim), make([]float32, rows*dim), make([]float32, rows)
		rmsNormTo(want, x, g, r, nil, dim, 1e-6, off, false)
		rmsNormApply(got, x, g, r, dim, off)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("offset %g: value %d recomputed as %g, the forward pass had %g", off, i, got[i], want[i])
			}
		}
	}
}
