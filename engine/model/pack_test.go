package model

import (
	"context"
	"github.com/trainyard/trainyard/engine/linalg"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestPackedWeights: packed bfloat16 weights (Weights.Pack) give the logits, LoRA gradients (through the
// input gradients dy·W) and decoding steps of 1 to 30 sequences (embedding rows read from a tied, packed head)
// of the same weights unpacked, up to float32 summation order, for every architecture, and account for the
// memory they add.
func TestPackedWeights(t *testing.T) {
	ctx := context.Background()
	all := [NumModules]bool{true, true, true, true, true, true, true}
	rng := rand.New(rand.NewSource(3))
	for name, cfg := range archConfigs() {
		w := randomModel(t, cfg, 12)
		plain, packed := w.ToBF16(), w.ToBF16()
		packed.Pack()
		if got, want := packed.MemoryBytes()-plain.MemoryBytes(), PackedBytes(cfg); got != want {
			t.Errorf("%s: packing added %d bytes, PackedBytes says %d", name, got, want)
		}
		// A decoding step of one sequence takes a Team only while some product reads a row-major copy: held
		// only packed (AVX2) or in the pair layout, the products split on linalg's helpers, which a partner's
		// spin would keep off the second core.
		onlyPacked := packed.Output.pairs != nil || linalg.PackedReplacesRowMajor(cfg.VocabSize)
		for m := 0; m < NumModules; m++ {
			o, _ := cfg.Shape(m)
			onlyPacked = onlyPacked && (packed.Layers[0].W[m].pairs != nil || linalg.PackedReplacesRowMajor(o))
		}
		if packed.noRowMajor != onlyPacked || plain.noRowMajor {
			t.Errorf("%s: no row-major copies (no Team for one sequence): packed %v, want %v; unpacked %v",
				name, packed.noRowMajor, onlyPacked, plain.noRowMajor)
		}
		lora, _ := NewLoRA(cfg, 2, 4, 0, all, 6)
		for _, ts := range lora.Tensors(cfg) {
			for i := range ts.Data {
				ts.Data[i] = float32(math.Cos(float64(i))) * 0.2
			}
		}
		// 4 × 12 tokens: past packedMinRows, so every projection and the head take the packed product.
		seqs := make([][]int, 4)
		for s := range seqs {
			for range 12 {
				seqs[s] = append(seqs[s], rng.Intn(cfg.VocabSize))
			}
		}
		rows := make([]int, 0, 44)
		for s := range seqs {
			for i := range 11 {
				rows = append(rows, s*12+i)
			}
		}
		grads := func(w *Weights) ([]float32, *LoRA) {
			p, err := w.Forward(ctx, seqs, PassOptions{LoRA: lora, Keep: true})
			if err != nil {
				t.Fatal(err)
			}
			logits := append([]float32(nil), p.Logits(rows)...)
			dl := make([]float32, len(logits))
			for i := range dl {
				dl[i] = float32(math.Sin(float64(i))) / float32(len(rows))
			}
			g := lora.ZeroLike()
			if err := p.Backward(ctx, rows, dl, Grads{L: g}); err != nil {
				t.Fatal(err)
			}
			return logits, g
		}
		lw, gw := grads(plain)
		lp, gp := grads(packed)
		closeTo(t, name+" logits", lp, lw)
		pt := gw.Tensors(cfg)
		for i, ts := range gp.Tensors(cfg) {
			closeTo(t, name+" "+ts.Name, ts.Data, pt[i].Data)
		}
		// A decoding step of 30 sequences, each a few positions in.
		decode := func(w *Weights) []float32 {
			caches := make([]*Cache, 30)
			toks := make([]int, 30)
			for i := range caches {
				caches[i] = w.NewCache(16)
				if _, err := w.Prefill(ctx, caches[i], seqs[i%4][:3+i%5], lora); err != nil {
					t.Fatal(err)
				}
				toks[i] = seqs[(i+1)%4][i%12]
			}
			out, err := w.Decode(ctx, caches, toks, lora)
			if err != nil {
				t.Fatal(err)
			}
			all := append([]float32(nil), out...)
			for _, b := range []int{1, 2, 7} { // one sequence (the matrix-vector path), and a few
				out, err := w.Decode(ctx, caches[:b], toks[:b], lora)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, out...)
			}
			return all
		}
		closeTo(t, name+" decoded logits", decode(packed), decode(plain))
	}
}

// closeTo fails when got and want differ by more than float32 summation order explains.
func closeTo(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-5+1e-4*math.Abs(float64(want[i]))) {
			t.Fatalf("%s[%d] = %v, unpacked %v", what, i, got[i], want[i])
		}
	}
}

// TestPackedForTheTiles: where the pair products take every batched product (linalg.PairsServeBatches), Pack lays the
// matrices out for them in place of the row-major ones, PackedBytes counts the difference, and a pass on the
// packed weights computes what one on the row-major weights does (both through the tiles, which read the
// same values).
func TestPackedForTheTiles(t *testing.T) {
	if !linalg.SetBF16Train(true) {
		t.Skip("no pair products (AMX tiles or avx512_bf16) on this CPU")
	}
	defer linalg.SetBF16Train(false)
	linalg.SetBF16Dot(true)
	defer linalg.SetBF16Dot(false)
	ctx := context.Background()
	configs := archConfigs() // matrices narrower than a tile's 32 values keep the blocked kernel's panels
	small := smolLM2
	small.VocabSize, small.Layers = 512, 2
	configs["smollm2-2-layers"] = small
	for name, cfg := range configs {
		w := randomModel(t, cfg, 21)
		plain, packed := w.ToBF16(), w.ToBF16()
		packed.Pack()
		// The pair layout replaces the row-major matrices: what packing adds is the panels' padding.
		if got, want := packed.MemoryBytes()-plain.MemoryBytes(), PackedBytes(cfg); got != want {
			t.Errorf("%s: packing for the tiles added %d bytes, PackedBytes says %d", name, got, want)
		}
		if o := packed.Output; linalg.PacksPairs(o.Rows, o.Cols) && (o.pairs == nil || o.BF16 != nil) {
			t.Errorf("%s: the head is packed: %v, its row-major copy kept: %v", name, o.pairs != nil, o.BF16 != nil)
		}
		seqs := [][]int{{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, {2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5}}
		// As many rows as the pair products take from the row-major weights (8 or more); the packed
		// weights take fewer rows too, each row rounded and summed as in a batch, so that a row's logits do
		// not depend on the rows computed with it.
		rows := []int{1, 4, 5, 7, 11, 13, 16, 17, 19, 23}
		logits := func(w *Weights, rows []int) []float32 {
			p, err := w.Forward(ctx, seqs, PassOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return append([]float32(nil), p.Logits(rows)...)
		}
		all := logits(packed, rows)
		closeAll(t, name+" logits", all, logits(plain, rows))
		v := cfg.VocabSize
		for i, r := range rows[:3] {
			if packed.Output.pairs == nil {
				break // a head too narrow for the pair layout goes by its rows' count
			}
			if one := logits(packed, []int{r}); !slices.Equal(one, all[i*v:(i+1)*v]) {
				t.Errorf("%s: row %d's logits alone differ from its logits among %d rows", name, r, len(rows))
			}
		}
	}
}

// TestDecodeFused: a decoding step (and a prefill, which extends caches the same way) multiplies a layer's
// q, k and v, and its gate and up, through their fused pair layouts (Layer.qkv, Layer.gateUp) with the
// logits of the same weights multiplied one projection at a time, bit for bit: with one adapter, with an
// adapter per sequence (and some on the base), with biases, with q/k norms and with Gemma 3's layers.
func TestDecodeFused(t *testing.T) {
	if !linalg.SetBF16Train(true) {
		t.Skip("no pair products on this CPU (neither AMX tiles nor avx512_bf16)")
	}
	defer linalg.SetBF16Train(false)
	linalg.SetBF16Dot(true)
	defer linalg.SetBF16Dot(false)
	ctx := context.Background()
	all := [NumModules]bool{true, true, true, true, true, true, true}
	// Widths of whole 32-row panels for q and k (v and up may end in part of one): they fuse.
	wide := func(c Config) Config {
		c.Dim, c.Heads, c.HeadDim, c.Hidden, c.VocabSize = 64, 4, 16, 96, 40
		if c.KVHeads == 1 {
			c.HeadDim = 32
		}
		return c
	}
	configs := map[string]Config{}
	for name, c := range archConfigs() {
		configs[name] = wide(c)
	}
	odd := wide(tinyConfig())
	odd.Hidden = 80 // gate 80 rows: not a whole number of panels, so gate and up stay apart
	configs["unfused-mlp"] = odd
	for name, cfg := range configs {
		w := randomModel(t, cfg, 5).ToBF16()
		w.Pack()
		ly := &w.Layers[0]
		if ly.qkv == nil || (ly.gateUp == nil) != (name == "unfused-mlp") {
			t.Fatalf("%s: fused q, k, v: %v; gate, up: %v", name, ly.qkv != nil, ly.gateUp != nil)
		}
		apart := *w
		apart.Layers = slices.Clone(w.Layers)
		for l := range apart.Layers {
			apart.Layers[l].qkv, apart.Layers[l].gateUp = nil, nil
		}
		var loras []*LoRA
		for seed := range int64(2) {
			lora, err := NewLoRA(cfg, 2, 4, 0, all, seed)
			if err != nil {
				t.Fatal(err)
			}
			for _, ts := range lora.Tensors(cfg) {
				for i := range ts.Data {
					ts.Data[i] = float32(math.Cos(float64(i)+float64(seed))) * 0.2
				}
			}
			loras = append(loras, lora)
		}
		steps := func(w *Weights) []float32 {
			const n = 9
			caches := make([]*Cache, n)
			seqLoRAs := make([]*LoRA, n)
			toks := make([]int, n)
			for i := range caches {
				caches[i] = w.NewCache(12)
				seqLoRAs[i] = []*LoRA{nil, loras[0], loras[1]}[i%3]
				prompt := []int{i % cfg.VocabSize, (3 * i) % cfg.VocabSize, 7, 1 + i%5}
				if _, err := w.Prefill(ctx, caches[i], prompt, loras[0]); err != nil {
					t.Fatal(err)
				}
				toks[i] = (5 * i) % cfg.VocabSize
			}
			one, err := w.Decode(ctx, caches, toks, loras[1])
			if err != nil {
				t.Fatal(err)
			}
			out := append([]float32(nil), one...)
			each, err := w.DecodeAdapters(ctx, caches, toks, seqLoRAs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			single, err := w.Decode(ctx, caches[:1], toks[:1], nil)
			if err != nil {
				t.Fatal(err)
			}
			return append(append(out, each...), single...)
		}
		if got, want := steps(w), steps(&apart); !slices.Equal(got, want) {
			t.Errorf("%s: logits with fused products differ from those one projection at a time", name)
		}
	}
}
