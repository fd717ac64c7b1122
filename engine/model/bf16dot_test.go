package model

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/trainyard/trainyard/engine/linalg"
)

// TestMain runs the package's tests with bfloat16 dot products and training's bfloat16 products off: the
// tests compare decoding with the float32 forward pass and gradients with finite differences to float
// rounding, and TestBF16DotLogits and TestBF16TrainProducts alone measure what those change.
func TestMain(m *testing.M) {
	linalg.SetBF16Dot(false)
	linalg.SetBF16Train(false)
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
	w32 := smallDotModel(t)
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
	checkLogitShift(t, "bfloat16 dot products", logits(true), logits(false), w.Cfg.VocabSize)
}

// smallDotModel is the float32 model TestBF16DotLogits and TestPairsOneRowLogits round: SmolLM2-135M's width,
// 8 layers, its vocabulary cut to 4,096.
func smallDotModel(t *testing.T) *Weights {
	t.Helper()
	cfg := smolLM2
	cfg.VocabSize, cfg.Layers = 4096, 8
	w32, err := NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w32.Init(3)
	return w32
}

// checkLogitShift logs the largest change of a logit and of a log-probability between got and want (rows of
// V logits each) and fails past 0.05, or when nothing changed (the path under test was not taken).
func checkLogitShift(t *testing.T, what string, got, want []float32, V int) {
	t.Helper()
	var maxLogit, maxLogprob float64
	for b := 0; b < len(want)/V; b++ {
		lseG, lseW := logSumExp(got[b*V:(b+1)*V]), logSumExp(want[b*V:(b+1)*V])
		for j := range V {
			g, w := float64(got[b*V+j]), float64(want[b*V+j])
			maxLogit = max(maxLogit, math.Abs(g-w))
			maxLogprob = max(maxLogprob, math.Abs((g-lseG)-(w-lseW)))
		}
	}
	t.Logf("%s: max |Δlogit| %.4f, max |Δlogprob| %.4f over %d×%d logits", what, maxLogit, maxLogprob, len(want)/V, V)
	if maxLogit > 0.05 || maxLogprob > 0.05 {
		t.Fatalf("%s moved a logit by %.4f and a logprob by %.4f, past 0.05", what, maxLogit, maxLogprob)
	}
	if maxLogit == 0 {
		t.Fatalf("%s changed nothing: the path was not taken", what)
	}
}

// TestPairsOneRowLogits states the same for a decoding step of one sequence on a base held only in the pair
// layout (Pack where the pair products take every batched product): its one row is rounded to bfloat16 as a
// batch's rows are (its prompt's 4 rows too). It moved the logits by at most 0.0078 and the log-probabilities
// by 0.0079 on the Zen 4 EPYC (logged); the bound asserted is TestBF16DotLogits' 0.05.
func TestPairsOneRowLogits(t *testing.T) {
	if !linalg.SetBF16Train(true) {
		t.Skip("no pair products (AMX tiles or avx512_bf16) on this CPU")
	}
	defer linalg.SetBF16Train(false)
	linalg.SetBF16Dot(true)
	defer linalg.SetBF16Dot(false)
	w32 := smallDotModel(t)
	plain, packed := w32.ToBF16(), w32.ToBF16()
	packed.Pack()
	if !packed.noRowMajor {
		t.Fatal("Pack left row-major matrices beside the pair layout")
	}
	ctx := context.Background()
	logits := func(w *Weights) []float32 {
		c := w.NewCache(64)
		if _, err := w.Prefill(ctx, c, []int{1, 20, 300, 4000}, nil); err != nil {
			t.Fatal(err)
		}
		out, err := w.Decode(ctx, []*Cache{c}, []int{7}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := logits(packed)
	linalg.SetBF16Dot(false) // the row-major weights' one-row products in float32
	checkLogitShift(t, "one row on the pair layout", got, logits(plain), w32.Cfg.VocabSize)
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

// TestBF16TrainProducts states the cost of training's bfloat16 products (linalg.SgemmBF16Train on a CPU with
// the pair products, AMX tiles or VDPBF16PS: activations and output gradients rounded to bfloat16 before
// every product with the frozen base, sums in float32): the logits, the loss and the LoRA gradients of 4
// sequences of 48 tokens on a bfloat16 base at SmolLM2-135M's width (8 layers, vocabulary cut to 4,096),
// with and without them. On the AMX Xeon: max |Δlogit| 0.11, loss 8.43234 against 8.43205, the worst LoRA
// tensor's gradient 7.0% of its norm away at cosine 0.9977 (logged); on the Zen 5 EPYC's VDPBF16PS tiles
// 0.107, 8.43212 against 8.43205, 6.6%, 0.9980. That is the rounding's doing, not the tiles': rounding the rows the
// same way and multiplying in float32 moves them by 0.099 and 5.6% (cosine 0.9986). These random-weight
// models are sensitive — rounding the weights themselves to bfloat16 moves engine/torchref's logits by
// 1–10% — so the bounds asserted are loose: 0.25, 10⁻³ of the loss, 15%, cosine 0.99.
func TestBF16TrainProducts(t *testing.T) {
	if !linalg.SetBF16Train(true) {
		t.Skip("no pair products (AMX tiles or avx512_bf16) on this CPU")
	}
	defer linalg.SetBF16Train(false)
	cfg := smolLM2
	cfg.VocabSize, cfg.Layers = 4096, 8
	w32, err := NewWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w32.Init(5)
	w := w32.ToBF16()
	all := [NumModules]bool{true, true, true, true, true, true, true}
	lora, _ := NewLoRA(cfg, 16, 32, 0, all, 7)
	for _, ts := range lora.Tensors(cfg) { // B is zero at initialisation, which would hide its gradient's path
		for i := range ts.Data {
			ts.Data[i] = float32(math.Sin(float64(i)*0.37)) * 0.02
		}
	}
	seqs := make([][]int, 4)
	for s := range seqs {
		for i := range 48 {
			seqs[s] = append(seqs[s], (s*977+i*131)%cfg.VocabSize)
		}
	}
	V := cfg.VocabSize
	run := func(bf16 bool) ([]float32, float64, *LoRA) {
		linalg.SetBF16Train(bf16)
		p, err := w.Forward(context.Background(), seqs, PassOptions{LoRA: lora, Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		var rows, targets []int
		for s, toks := range seqs {
			for i := 0; i+1 < len(toks); i++ {
				rows = append(rows, p.Offsets()[s]+i)
				targets = append(targets, toks[i+1])
			}
		}
		logits := p.Logits(rows)
		dl := make([]float32, len(logits))
		var loss float64
		for i, tg := range targets {
			row := logits[i*V : (i+1)*V]
			lse := logSumExp(row)
			loss -= float64(row[tg]) - lse
			for j, v := range row {
				pj := math.Exp(float64(v) - lse)
				if j == tg {
					pj--
				}
				dl[i*V+j] = float32(pj / float64(len(targets)))
			}
		}
		g := lora.ZeroLike()
		if err := p.Backward(context.Background(), rows, dl, Grads{L: g}); err != nil {
			t.Fatal(err)
		}
		return logits, loss / float64(len(targets)), g
	}
	lb, lossB, gb := run(true)
	le, lossE, ge := run(false)
	var maxLogit float64
	for i := range lb {
		maxLogit = max(maxLogit, math.Abs(float64(lb[i]-le[i])))
	}
	worst, minCos := 0.0, 1.0
	et := ge.Tensors(cfg)
	for i, ts := range gb.Tensors(cfg) {
		var d2, e2, dot, b2 float64
		for j, v := range ts.Data {
			e := float64(et[i].Data[j])
			d2 += (float64(v) - e) * (float64(v) - e)
			e2 += e * e
			b2 += float64(v) * float64(v)
			dot += float64(v) * e
		}
		if e2 == 0 {
			t.Fatalf("%s: zero gradient", ts.Name)
		}
		worst = max(worst, math.Sqrt(d2/e2))
		minCos = min(minCos, dot/math.Sqrt(e2*b2))
	}
	t.Logf("bfloat16 products: max |Δlogit| %.4f, loss %.6f vs %.6f, worst LoRA gradient |Δ|/|g| %.4f, min cosine %.6f",
		maxLogit, lossB, lossE, worst, minCos)
	if maxLogit == 0 {
		t.Fatal("bfloat16 products changed nothing: the path was not taken")
	}
	if maxLogit > 0.25 || math.Abs(lossB-lossE) > 1e-3*math.Abs(lossE) || worst > 0.15 || minCos < 0.99 {
		t.Fatalf("bfloat16 products moved a logit by %.4f, the loss from %.6f to %.6f, a LoRA gradient by %.4f of its norm (cosine %.6f)",
			maxLogit, lossE, lossB, worst, minCos)
	}
}

// TestRoundedAhead: a forward pass whose norms round their rows to bfloat16 for q, k, v, gate and up
// (Pass.rounded) gives the logits of the products rounding the rows themselves, bit for bit — with and
// without a LoRA adapter, over a batch whose rows are not a multiple of 32.
func TestRoundedAhead(t *testing.T) {
	cfg := smolLM2
	cfg.VocabSize, cfg.Layers = 4096, 8
	w := roundedAheadBase(t, cfg, 3)
	all := [NumModules]bool{true, true, true, true, true, true, true}
	lora, _ := NewLoRA(w.Cfg, 8, 16, 0, all, 3)
	for _, ts := range lora.Tensors(w.Cfg) {
		for i := range ts.Data {
			ts.Data[i] = float32(math.Sin(float64(i)*0.37)) * 0.02
		}
	}
	seqs := [][]int{make([]int, 37), make([]int, 50)}
	for s := range seqs {
		for i := range seqs[s] {
			seqs[s][i] = (s*977 + i*131) % w.Cfg.VocabSize
		}
	}
	for _, l := range []*LoRA{nil, lora} {
		logits := func(ahead bool) []float32 {
			defer func(was bool) { roundAhead = was }(roundAhead)
			roundAhead = ahead
			p, err := w.Forward(context.Background(), seqs, PassOptions{LoRA: l, Keep: true})
			if err != nil {
				t.Fatal(err)
			}
			if ahead && p.r16 == nil {
				t.Fatal("the pass rounded no rows ahead")
			}
			rows := make([]int, p.Rows())
			for i := range rows {
				rows[i] = i
			}
			return p.Logits(rows)
		}
		got, want := logits(true), logits(false)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("lora %v: logit %d = %v rounded ahead, %v by the products", l != nil, i, got[i], want[i])
			}
		}
	}
}

// roundedAheadBase turns the pair products on for tb (this package's tests run with them off: off again at
// tb's end) and returns cfg's model with random weights (seed) in bfloat16, held in the pair layout; it skips
// tb where the pair products do not take rows rounded ahead (linalg.RoundedRows).
func roundedAheadBase(tb testing.TB, cfg Config, seed int64) *Weights {
	tb.Helper()
	tb.Cleanup(func() {
		linalg.SetBF16Train(false)
		linalg.SetBF16Dot(false)
	})
	if !linalg.SetBF16Train(true) || !linalg.SetBF16Dot(true) || !linalg.RoundedRows(cfg.Dim) {
		tb.Skip("no pair products taking rows rounded ahead on this CPU")
	}
	w32, err := NewWeights(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	w32.Init(seed)
	w := w32.ToBF16()
	w.Pack()
	if w.Layers[0].W[ModQ].pairs == nil {
		tb.Fatal("the base is not held in the pair layout")
	}
	return w
}
