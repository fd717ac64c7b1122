package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand"

	"github.com/trainyard/trainyard/engine/linalg"
)

// ErrInput reports invalid model input (token id out of range, empty or too long sequence).
var ErrInput = errors.New("invalid model input")

// PassOptions configure a forward pass.
type PassOptions struct {
	LoRA  *LoRA  // nil: base model only
	Keep  bool   // keep activations so Backward can run
	Arena *Arena // buffer source (nil: heap)
	// DropoutSeed seeds LoRA dropout masks; dropout applies only when Keep is set (training).
	DropoutSeed int64
	// OnKV, when set, receives each layer's post-RoPE keys and values [N × kvDim] (used to fill a KV cache).
	OnKV func(layer int, k, v []float32)
	// Prefix, when set, has one entry per sequence: −1, or the index of an earlier sequence (itself
	// without a prefix) whose tokens come before this one's. Such a sequence's positions start after its
	// prefix and its queries attend to the prefix's keys, so sequences sharing a prefix (the rollouts of
	// one prompt) compute it once: the result is that of each sequence with the prefix in front, but the
	// prefix's rows are computed, and their gradients accumulated, once.
	Prefix []int
}

// layerCache holds one block's activations (all [N × width], row per token).
type layerCache struct {
	x, h1, q, k, v, att, x2, h2, g, u, a []float32
	r1, r2                               []float32
	qraw, kraw, rq, rk                   []float32   // QKNorm: projections before the norm and its 1/rms per head
	o, d, r3, r4                         []float32   // SandwichNorm: the sublayers' outputs before their norms, 1/rms
	probs                                [][]float32 // per (sequence, kv head): [T·group × (P + T)] attention weights (stackHeads' rows)
	lu                                   [NumModules][]float32
	luSet                                [NumModules]bool      // lu already holds x·Aᵀ (adapterInputs)
	xd, mask                             [NumModules][]float32 // dropout: dropped input and scaled mask
}

// Pass is one forward pass over a batch of sequences packed row after row.
type Pass struct {
	w       *Weights
	lora    *LoRA
	seqLoRA []*LoRA // per sequence, for passes of several adapters (ExtendAdapters, DecodeAdapters)
	opt     PassOptions
	seqs    [][]int
	offs    []int // offs[s] is the first row of sequence s; offs[len] = N
	prefix  []int // PassOptions.Prefix (nil: no shared prefixes)
	pos     []int // position of every row
	N       int
	layers  []*layerCache
	xOut    []float32 // final residual stream
	rf, hf  []float32 // final norm scale and normed output
	rng     *rand.Rand
	scratch [][]float32  // per worker
	decode  []*Cache     // set for a decode step
	team    *linalg.Team // set for a decode step of one sequence
	dhf     []float32    // gradient w.r.t. hf accumulated by AddHeadGrad
	// hbuf is a pass with kept activations' one buffer for every layer's h1, h2 and a (N × max(dim,
	// hidden)): each is read only by the products right after it, and BackwardHidden recomputes them from
	// what the layer keeps (x, x2 and their norms' scales; g and u) instead. Kept per layer they were 31% of
	// a 135M pass's memory per token, and a smaller pass repeats a group's shared prompt more often.
	hbuf []float32
	r16  []uint16 // rounded's buffer
	// prefixGrads is attentionBack's: each sequence's part of its shared prefix's key and value gradients,
	// 2·P·KVDim values a sequence after a prefix of P rows (1.2 MB for a group of 8 rollouts after a prompt
	// of 98 tokens at SmolLM2's shape: beside the pass's arena, within the slack its estimate leaves).
	prefixGrads []float32
	FlopsFwd    int64 // matmul flops issued by the forward pass
	FlopsBwd    int64 // matmul flops issued by Backward
}

// Forward runs seqs through the model.
func (w *Weights) Forward(ctx context.Context, seqs [][]int, opt PassOptions) (*Pass, error) {
	c := w.Cfg
	p := &Pass{w: w, lora: opt.LoRA, opt: opt, seqs: seqs, offs: make([]int, len(seqs)+1), prefix: opt.Prefix}
	if err := p.checkPrefix(); err != nil {
		return nil, err
	}
	for s, toks := range seqs {
		start := 0
		if p.prefix != nil && p.prefix[s] >= 0 {
			start = len(seqs[p.prefix[s]])
		}
		if len(toks) == 0 || start+len(toks) > c.MaxSeqLen {
			return nil, fmt.Errorf("%w: sequence %d has %d tokens (1..%d allowed)", ErrInput, s, start+len(toks), c.MaxSeqLen)
		}
		for i, id := range toks {
			if id < 0 || id >= c.VocabSize {
				return nil, fmt.Errorf("%w: sequence %d token %d is id %d (vocabulary %d)", ErrInput, s, i, id, c.VocabSize)
			}
			p.pos = append(p.pos, start+i)
		}
		p.offs[s+1] = p.offs[s] + len(toks)
	}
	p.N = p.offs[len(seqs)]
	if opt.Keep && p.lora != nil && p.lora.Dropout > 0 {
		p.rng = rand.New(rand.NewSource(opt.DropoutSeed))
	}
	x := p.embed()
	if err := p.run(ctx, x); err != nil {
		return nil, err
	}
	return p, nil
}

// checkPrefix checks PassOptions.Prefix: an entry for every sequence, each −1 (none) or an earlier sequence
// without a prefix of its own.
func (p *Pass) checkPrefix() error {
	if p.prefix == nil {
		return nil
	}
	if len(p.prefix) != len(p.seqs) {
		return fmt.Errorf("%w: %d prefix entries for %d sequences", ErrInput, len(p.prefix), len(p.seqs))
	}
	for s, ps := range p.prefix {
		if ps >= 0 && (ps >= s || p.prefix[ps] >= 0) {
			return fmt.Errorf("%w: sequence %d has prefix %d, not an earlier sequence without one", ErrInput, s, ps)
		}
	}
	return nil
}

// prefixRows returns the first row and the length of sequence s's shared prefix (0, 0 without one).
func (p *Pass) prefixRows(s int) (base, n int) {
	if p.prefix == nil || p.prefix[s] < 0 {
		return 0, 0
	}
	ps := p.prefix[s]
	return p.offs[ps], p.offs[ps+1] - p.offs[ps]
}

func (p *Pass) embed() []float32 {
	D := p.w.Cfg.Dim
	x := p.opt.Arena.dirty(p.N * D)
	t := 0
	for _, toks := range p.seqs {
		for _, id := range toks {
			p.w.Embed.Row(id, x[t*D:t*D+D])
			t++
		}
	}
	if s := p.w.Cfg.embedScale(); s != 1 {
		linalg.Scale(s, x)
	}
	return x
}

// run applies the blocks and the final norm to the embedded rows x.
func (p *Pass) run(ctx context.Context, x []float32) error {
	c := p.w.Cfg
	p.scratch = make([][]float32, maxWorkers())
	var shared *layerCache
	for l := 0; l < c.Layers; l++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		lc := shared
		if lc == nil || p.opt.Keep {
			lc = p.newLayerCache()
			if !p.opt.Keep {
				shared = lc
			}
		}
		if p.opt.Keep {
			p.layers = append(p.layers, lc)
		}
		x = p.block(l, lc, x)
	}
	p.xOut = x
	p.rf = p.opt.Arena.dirty(p.N)
	p.hf = p.opt.Arena.dirty(p.N * c.Dim)
	rmsNormTo(p.hf, x, p.w.FinalNorm, p.rf, nil, c.Dim, c.NormEps, c.normOffset(), false)
	return nil
}

func (p *Pass) newLayerCache() *layerCache {
	c, N, ar := p.w.Cfg, p.N, p.opt.Arena
	lc := &layerCache{q: ar.dirty(N * c.QDim()), k: ar.dirty(N * c.KVDim()), v: ar.dirty(N * c.KVDim()),
		att: ar.dirty(N * c.QDim()), g: ar.dirty(N * c.Hidden), u: ar.dirty(N * c.Hidden), r1: ar.dirty(N), r2: ar.dirty(N)}
	if p.opt.Keep {
		if p.hbuf == nil {
			p.hbuf = ar.dirty(N * max(c.Dim, c.Hidden))
		}
		lc.h1, lc.h2, lc.a = p.hbuf[:N*c.Dim], p.hbuf[:N*c.Dim], p.hbuf[:N*c.Hidden]
	} else {
		lc.h1, lc.h2, lc.a = ar.dirty(N*c.Dim), ar.dirty(N*c.Dim), ar.dirty(N*c.Hidden)
	}
	if c.QKNorm {
		lc.qraw, lc.kraw = ar.dirty(N*c.QDim()), ar.dirty(N*c.KVDim())
		lc.rq, lc.rk = ar.dirty(N*c.Heads), ar.dirty(N*c.KVHeads)
	}
	if c.SandwichNorm {
		lc.o, lc.d, lc.r3, lc.r4 = ar.dirty(N*c.Dim), ar.dirty(N*c.Dim), ar.dirty(N), ar.dirty(N)
	}
	if p.lora != nil {
		for m := 0; m < NumModules; m++ {
			if p.lora.Targets[m] {
				lc.lu[m] = ar.dirty(N * p.lora.Rank)
			}
		}
	}
	for m := 0; m < NumModules; m++ {
		if r := maxRank(p.seqLoRA, m); r > 0 {
			lc.lu[m] = ar.dirty(N * r)
		}
	}
	return lc
}

// block runs one decoder layer on x and returns its output (a new buffer when activations are kept,
// otherwise x updated in place). With activations kept, the residual copies the two sublayers add into are
// written by the norms that read their rows anyway.
func (p *Pass) block(l int, lc *layerCache, x []float32) []float32 {
	c := p.w.Cfg
	ly := &p.w.Layers[l]
	x2, out := x, x
	var cp1 []float32
	if p.opt.Keep {
		lc.x = x
		x2 = p.opt.Arena.dirty(len(x))
		cp1 = x2
	}
	off := c.normOffset()
	h16 := p.rounded(c.Dim) // h1's rows rounded for q, k and v, then h2's for gate and up
	rmsNormRounding(lc.h1, h16, x, ly.AttnNorm, lc.r1, cp1, c.Dim, c.NormEps, off, false)
	p.adapterInputs(l, lc, lc.h1, ModQ, ModK, ModV)
	q, k := lc.q, lc.k
	if c.QKNorm {
		q, k = lc.qraw, lc.kraw
	}
	if !p.linearsFused(l, lc, ly.qkv, lc.h1, qkvModules, q, k, lc.v) {
		p.linearRounded(l, ModQ, lc, lc.h1, h16, q, 0)
		p.linearRounded(l, ModK, lc, lc.h1, h16, k, 0)
		p.linearRounded(l, ModV, lc, lc.h1, h16, lc.v, 0)
	}
	if c.QKNorm {
		rmsNormTo(lc.q, lc.qraw, ly.QNorm, lc.rq, nil, c.HeadDim, c.NormEps, off, false)
		rmsNormTo(lc.k, lc.kraw, ly.KNorm, lc.rk, nil, c.HeadDim, c.NormEps, off, false)
	}
	p.w.ropeOf(l).applyRows(lc.q, lc.k, c.Heads, c.KVHeads, p.pos, false)
	if p.opt.OnKV != nil {
		p.opt.OnKV(l, lc.k, lc.v)
	}
	if p.decode != nil {
		p.attendCache(l, lc)
	} else {
		p.attention(l, lc)
	}
	if c.SandwichNorm {
		p.linear(l, ModO, lc, lc.att, lc.o, 0)
		rmsNormTo(x2, lc.o, ly.PostAttnNorm, lc.r3, nil, c.Dim, c.NormEps, off, true)
	} else {
		p.linear(l, ModO, lc, lc.att, x2, 1)
	}
	lc.x2 = x2
	var cp2 []float32
	if p.opt.Keep {
		out = p.opt.Arena.dirty(len(x))
		cp2 = out
	}
	rmsNormRounding(lc.h2, h16, x2, ly.MLPNorm, lc.r2, cp2, c.Dim, c.NormEps, off, false)
	p.adapterInputs(l, lc, lc.h2, ModGate, ModUp)
	if !p.linearsFused(l, lc, ly.gateUp, lc.h2, gateUpModules, lc.g, lc.u) {
		p.linearRounded(l, ModGate, lc, lc.h2, h16, lc.g, 0)
		p.linearRounded(l, ModUp, lc, lc.h2, h16, lc.u, 0)
	}
	a16 := p.rounded(c.Hidden) // the buffer h2's rows were in: gate and up are done
	gatedActivation(c, lc.a, a16, lc.g, lc.u)
	if c.SandwichNorm {
		p.linearRounded(l, ModDown, lc, lc.a, a16, lc.d, 0)
		rmsNormTo(out, lc.d, ly.PostMLPNorm, lc.r4, nil, c.Dim, c.NormEps, off, true)
	} else {
		p.linearRounded(l, ModDown, lc, lc.a, a16, out, 1)
	}
	return out
}

// linear computes y = beta·y + x·Wᵀ (+ bias) (+ the LoRA term) for projection m of layer l over all N rows.
func (p *Pass) linear(l, m int, lc *layerCache, x, y []float32, beta float32) {
	p.linearRounded(l, m, lc, x, nil, y, beta)
}

// linearRounded is linear with x's rows also rounded to bfloat16 already (x16, from Pass.rounded; nil:
// not), which the product with the base takes where it can (linalg.SgemmPackedPairsRounded).
//
// The adapter's s·u·Bᵀ goes into y with the product with the base (Mat.mulTPlus: as it writes y, where the
// base is held packed) unless the pass is a decoding step, as a product of its own after it there; then the
// bias.
func (p *Pass) linearRounded(l, m int, lc *layerCache, x []float32, x16 []uint16, y []float32, beta float32) {
	out, _ := p.w.Cfg.Shape(m)
	N := p.N
	w := &p.w.Layers[l].W[m]
	term, adapted := p.adapterTerm(l, m, lc, x)
	switch {
	case adapted && p.decode == nil:
		lr := term // on the heap (the products keep it); a decoding step's term is not
		w.mulTPlus(N, x, x16, beta, y, &lr)
	case x16 != nil && w.pairs != nil: // a pass's rows rounded ahead: not a decoding step, so not adapted here
		linalg.SgemmPackedPairsRounded(N, 1, x, w.Cols, x16, w.pairs, beta, y, w.Rows)
	default:
		w.mulTPass(p.team, p.decode != nil, N, x, beta, y)
		if adapted {
			term.Add(N, out, y, out)
		}
	}
	p.linearDone(l, m, lc, x, y)
}

// qkvModules and gateUpModules are the projections of Layer.qkv and Layer.gateUp, in their order.
var (
	qkvModules    = []int{ModQ, ModK, ModV}
	gateUpModules = []int{ModGate, ModUp}
)

// linearsFused is linear (beta 0) for the projections ms of layer l, which all read x, into ys, in a
// decoding step, through f, their weights fused (Layer.qkv, Layer.gateUp): one product, each projection's
// columns written into its own output (linalg.SgemmPackedPairsSplit), then each one's adapter term, bias
// and per-sequence adapters as linearRounded adds them. The sums are linearRounded's, bit for bit. It
// reports false, having done nothing, for other passes (their products have rows enough to keep both
// workers busy on each matrix, and take them rounded ahead, or with the adapter's term) and where the
// weights are not fused.
//
// A layer's q, k and v at SmolLM2-135M's shape are 18, 6 and 6 panels of 32 rows: apart, each worker took
// 3 of k's, the first of them a cold read from memory, between two joins. The body's products of a decoding
// step (linalg's BenchmarkDecodeBody, fused against pairs, Zen 4 EPYC): 7.0–7.8 ms against 8.3–8.6 at 8
// rows, 18.5–19.2 against 19.6–20.0 at 32.
func (p *Pass) linearsFused(l int, lc *layerCache, f *linalg.PackedPairs, x []float32, ms []int, ys ...[]float32) bool {
	if f == nil || p.decode == nil {
		return false
	}
	_, in := p.w.Cfg.Shape(ms[0])
	linalg.SgemmPackedPairsSplit(p.N, x, in, f, ys...)
	for i, m := range ms {
		if term, adapted := p.adapterTerm(l, m, lc, x); adapted {
			out, _ := p.w.Cfg.Shape(m)
			term.Add(p.N, out, ys[i], out)
		}
		p.linearDone(l, m, lc, x, ys[i])
	}
	return true
}

// adapterTerm is the adapter's s·u·Bᵀ for projection m of layer l (u = x·Aᵀ, computed here unless
// adapterInputs did), and whether the pass's one adapter adapts m (false for per-sequence adapters:
// seqAdapters).
func (p *Pass) adapterTerm(l, m int, lc *layerCache, x []float32) (linalg.LowRank, bool) {
	if p.seqLoRA != nil || p.lora == nil || !p.lora.Targets[m] {
		return linalg.LowRank{}, false
	}
	out, _ := p.w.Cfg.Shape(m)
	r := p.lora.Rank
	u := p.adapterInput(l, m, lc, x)
	p.FlopsFwd += int64(2 * p.N * out * r)
	return linalg.LowRank{Rank: r, Alpha: p.lora.Scale(), U: u, LDU: r, V: p.lora.B[l][m], LDV: r, TransV: true}, true
}

// linearDone finishes y = x·Wᵀ for projection m of layer l once its product (and the one adapter's term) is
// in: the flops, the bias and the per-sequence adapters' terms.
func (p *Pass) linearDone(l, m int, lc *layerCache, x, y []float32) {
	out, in := p.w.Cfg.Shape(m)
	N := p.N
	p.FlopsFwd += int64(2 * N * out * in)
	if b := p.w.Layers[l].Bias[m]; b != nil {
		for r := 0; r < N; r++ {
			linalg.Axpy(1, b, y[r*out:(r+1)*out])
		}
	}
	if p.seqLoRA != nil {
		p.seqAdapters(l, m, lc, x, y)
	}
}

// adapterInput is the adapter's u = x·Aᵀ for projection m (lc.lu[m], computed unless adapterInputs did), with
// x's dropped copy when the pass drops (lc.mask[m], lc.xd[m]).
func (p *Pass) adapterInput(l, m int, lc *layerCache, x []float32) []float32 {
	_, in := p.w.Cfg.Shape(m)
	N := p.N
	r := p.lora.Rank
	xd := x
	if p.rng != nil {
		keep := 1 - p.lora.Dropout
		lc.mask[m] = p.opt.Arena.alloc(N * in)
		lc.xd[m] = p.opt.Arena.alloc(N * in)
		for i := range x {
			if p.rng.Float32() < keep {
				lc.mask[m][i] = 1 / keep
				lc.xd[m][i] = x[i] / keep
			}
		}
		xd = lc.xd[m]
	}
	u := lc.lu[m]
	if lc.luSet[m] {
		lc.luSet[m] = false
	} else {
		linalg.Sgemm(false, true, N, r, in, 1, xd, in, p.lora.A[l][m], in, 0, u, r)
	}
	p.FlopsFwd += int64(2 * N * r * in)
	return u
}

// adapterInputs sets lc.lu[m] = x·A_mᵀ for the adapted projections among ms, which all read x, in one
// product (linalg.MulTParts: x read once for all of them, not once each), and marks them for linearRounded,
// which would compute them one at a time. Not with dropout (each projection drops its own copy of x) or
// per-sequence adapters.
func (p *Pass) adapterInputs(l int, lc *layerCache, x []float32, ms ...int) {
	if p.lora == nil || p.rng != nil || p.seqLoRA != nil {
		return
	}
	_, in := p.w.Cfg.Shape(ms[0])
	r := p.lora.Rank
	parts := make([]linalg.TPart, 0, len(ms))
	for _, m := range ms {
		if p.lora.Targets[m] {
			parts = append(parts, linalg.TPart{Cols: r, B: p.lora.A[l][m], LDB: in, C: lc.lu[m], LDC: r})
		}
	}
	if len(parts) < 2 {
		return
	}
	linalg.MulTParts(p.N, in, x, in, parts)
	for _, m := range ms {
		lc.luSet[m] = p.lora.Targets[m]
	}
}

// attention computes softmax(cap(s·q·kᵀ) + mask)·v per sequence and head into lc.att, with s the attention
// scale (1/√d unless configured), cap the optional soft-capping and the mask causal (and, in a local layer,
// limited to the window). A sequence with a shared prefix attends to the prefix's P rows before its own T:
// its weights are a T × (P + T) matrix, the prefix's columns first.
//
// The query heads that share a key/value head go through its keys and values together: their rows are
// stacked, head after head for each position (stackHeads), so each product has group times the rows and
// reads the keys and values once. (One head at a time, the products were 64 rows by a few hundred, and ran at
// 36 GFLOP/s on a Zen 4 core that does 116.)
func (p *Pass) attention(l int, lc *layerCache) {
	c := p.w.Cfg
	win := c.window(l)
	S := len(p.seqs)
	if p.opt.Keep {
		p.allocProbs(lc)
	}
	G := c.Heads / c.KVHeads
	qd, kd, hd, scale := c.QDim(), c.KVDim(), c.HeadDim, c.attnScale()
	parallel(S*c.KVHeads, func(wk, i int) {
		s, kvh := i/c.KVHeads, i%c.KVHeads
		base, T := p.offs[s], p.offs[s+1]-p.offs[s]
		pb, P := p.prefixRows(s)
		W := P + T
		n := 2 * T * G * hd
		if !p.opt.Keep {
			n += T * G * W
		}
		buf := p.workerScratch(wk, n)
		qs, out, A := buf[:T*G*hd], buf[T*G*hd:2*T*G*hd], buf[2*T*G*hd:]
		if p.opt.Keep {
			A = lc.probs[s*c.KVHeads+kvh]
		}
		stackHeads(qs, lc.q[base*qd+kvh*G*hd:], qd, T, G*hd)
		k, v := lc.k[base*kd+kvh*hd:], lc.v[base*kd+kvh*hd:]
		kp, vp := lc.k[pb*kd+kvh*hd:], lc.v[pb*kd+kvh*hd:]
		for _, b := range causalBlocks(T) {
			r0, r1 := b[0], b[1] // rows r0..r1-1 see the prefix and own positions 0..r1-1 at most
			R := (r1 - r0) * G   // their stacked rows
			q, a, o := qs[r0*G*hd:], A[r0*G*W:], out[r0*G*hd:]
			if P > 0 {
				linalg.Sgemm(false, true, R, P, hd, scale, q, hd, kp, kd, 0, a, W)
			}
			linalg.SgemmBand(false, true, R, r1, hd, scale, q, hd, k, kd, 0, a[P:], W, attnBand(linalg.BandCols, r0, G))
			for r := r0; r < r1; r++ {
				lo := windowStart(P+r, win)
				for g := range G {
					row := A[(r*G+g)*W : (r*G+g+1)*W]
					if c.AttnSoftcap > 0 {
						softcap(row[lo:P+r+1], c.AttnSoftcap)
					}
					softmaxWindowRow(row, lo, P+r)
				}
			}
			var beta float32
			if P > 0 {
				linalg.Sgemm(false, false, R, hd, P, 1, a, W, vp, kd, 0, o, hd)
				beta = 1
			}
			linalg.SgemmBand(false, false, R, hd, r1, 1, a[P:], W, v, kd, beta, o, hd, attnBand(linalg.BandKEnd, r0, G))
		}
		unstackHeads(lc.att[base*qd+kvh*G*hd:], qd, out, T, G*hd)
	})
	p.FlopsFwd += 4 * p.attentionPairs()
}

// stackHeads copies rows of a group's query heads (T rows of width values, stride ld) into dst as T·group
// rows of one head's width: position after position, the group's heads in order (their columns are
// adjacent in a row of queries).
func stackHeads(dst, src []float32, ld, T, width int) {
	for r := range T {
		copy(dst[r*width:(r+1)*width], src[r*ld:r*ld+width])
	}
}

// unstackHeads is stackHeads' inverse: the stacked rows back into their places (stride ld).
func unstackHeads(dst []float32, ld int, src []float32, T, width int) {
	for r := range T {
		copy(dst[r*ld:r*ld+width], src[r*width:(r+1)*width])
	}
}

// attentionPairs counts the (query, key) pairs causal attention scores in the pass, times the heads' width:
// each costs two flops in the scores and two in the weighted sum of values per dimension forward, twice
// that backward. (The blocks compute a few masked pairs too; they are not counted.)
func (p *Pass) attentionPairs() int64 {
	var n int64
	for s := range p.seqs {
		_, P := p.prefixRows(s)
		T := int64(p.offs[s+1] - p.offs[s])
		n += T*int64(P) + T*(T+1)/2
	}
	return n * int64(p.w.Cfg.HeadDim*p.w.Cfg.Heads)
}

// causalBlocks splits a sequence's T query rows into blocks of about attnBlock rows, [r0, r1) each: the rows
// of a block attend to positions before r1 only, so their scores and the products with them stop there.
// Computing the whole T × T square did twice the useful work of causal attention; blocks of 64 rows left
// a quarter of it over at T = 128, an eighth at T = 512, before the products' bands (attnBand) left out
// nearly all of the rest within each block.
func causalBlocks(T int) [][2]int {
	n := max(1, (T+attnBlock/2)/attnBlock)
	out := make([][2]int, n)
	for i := range out {
		out[i] = [2]int{T * i / n, T * (i + 1) / n}
	}
	return out
}

// attnBand is the band of one of the attention's products (linalg.SgemmBand): what a query row needs of
// the keys before its own position, by blocks of 14 stacked rows and 32 keys, where a block of query rows
// (causalBlocks) computed every key up to its last row's. SmolLM2-135M's attention forward and
// backward, 32 sequences of 128 tokens (BenchmarkAttention): 17.9–18.0 → 16.0–16.4 ms a layer on 2 cores of
// a Zen 5 EPYC (3 interleaved runs of two test binaries); its SFT step 2–3% faster. No bit changes: a band
// leaves out only products with zeros and scores past a row's position (TestAttentionBands).
func attnBand(kind linalg.BandKind, off, div int) linalg.Band {
	if !attnBands {
		return linalg.Band{}
	}
	return linalg.Band{Kind: kind, Off: off, Div: div}
}

// attnBands turns attnBand on (TestAttentionBands compares the passes without it).
var attnBands = true

// attnBlock is causalBlocks' block of query rows. With the bands, blocks no longer skip much that the tiles
// do not, and fewer, larger products pack fewer keys: BenchmarkAttention (32 sequences of 128 tokens)
// 16.2–17.1 ms a layer with blocks of 64, 15.1–16.7 with 128 (one block), 19.1–20.3 with 32; at 8 × 512
// tokens 43.1–44.1, 41.3–43.4 and 44.0–44.5 with one block (Zen 5 EPYC, interleaved runs). A variable for
// TestCausalBlocks.
var attnBlock = 128

// allocProbs carves the attention weights of every (sequence, kv head) out of one arena buffer (before the
// workers start: the arena is not safe for concurrent use).
func (p *Pass) allocProbs(lc *layerCache) {
	c := p.w.Cfg
	KV, G := c.KVHeads, c.Heads/c.KVHeads
	lc.probs = make([][]float32, len(p.seqs)*KV)
	size := func(s int) int {
		_, P := p.prefixRows(s)
		T := p.offs[s+1] - p.offs[s]
		return G * T * (P + T)
	}
	total := 0
	for s := range p.seqs {
		total += KV * size(s)
	}
	buf := p.opt.Arena.dirty(total)
	for i := range lc.probs {
		n := size(i / KV)
		lc.probs[i], buf = buf[:n:n], buf[n:]
	}
}

func (p *Pass) workerScratch(wk, n int) []float32 {
	if cap(p.scratch[wk]) < n {
		p.scratch[wk] = make([]float32, n)
	}
	return p.scratch[wk][:n]
}

// roundAhead turns Pass.rounded on (tests compare the products without it).
var roundAhead = true

// rounded is the pass's buffer for a producer's rows of k values rounded to bfloat16 as it writes them, for
// the products with the base that multiply them: the attention norm's rows for q, k and v, the MLP norm's for
// gate and up (rmsNormRounding), the gated activation's for down (gatedActivation). nil where those
// products would not take them: a decoding step, a base not held in the pair layout, more than one block of
// k (linalg.RoundedRows). Each product rounding its rows itself read them back from memory, three times for
// q, k and v and twice for gate and up: a 135M training pass's forward (`BenchmarkForwardRounded`) went
// 808 → 771 ms with the norms rounding and then 918 → 821 with the activation too, on a Zen 4 EPYC whose
// speed moved between the two, and 594 → 537 ms (medians) on an Emerald Rapids Xeon's AMX tiles, whose
// rows the products had rounded themselves until RoundRowBF16 learnt their order. One buffer serves every
// layer, its N rows rounded up to 32 (the products read whole blocks): 3.9 MB for 1,280 rows of 1,536
// (RoundedRowsBytes).
func (p *Pass) rounded(k int) []uint16 {
	if !roundAhead || p.decode != nil || !linalg.RoundedRows(k) || p.w.Layers[0].W[ModQ].pairs == nil {
		return nil
	}
	n := linalg.RoundedLen(p.N, k)
	if cap(p.r16) < n {
		p.r16 = make([]uint16, n)
	}
	return p.r16[:n]
}

// Rows is the number of token rows in the pass.
func (p *Pass) Rows() int { return p.N }

// Offsets returns the first row of every sequence (and the total row count last).
func (p *Pass) Offsets() []int { return p.offs }
