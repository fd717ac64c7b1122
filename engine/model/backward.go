package model

import (
	"context"
	"errors"
	"fmt"

	"github.com/trainyard/trainyard/engine/linalg"
)

// Grads receives gradients (accumulated, so several passes can add into one buffer). W collects full-model
// gradients (pretraining) and L the adapter's; either may be nil, and the base weights are only read.
type Grads struct {
	W *Weights
	L *LoRA
}

// Backward back-propagates dLogits ([len(rows) × vocab], the loss gradient w.r.t. Logits(rows)) through the
// pass and adds the parameter gradients to g.
func (p *Pass) Backward(ctx context.Context, rows []int, dLogits []float32, g Grads) error {
	if !p.opt.Keep {
		return errors.New("model: Backward needs a pass run with Keep")
	}
	if err := checkGradDType(g); err != nil {
		return err
	}
	p.AddHeadGrad(rows, dLogits, g)
	return p.BackwardHidden(ctx, g)
}

// checkGradDType refuses a full-weight gradient buffer the products cannot write into.
func checkGradDType(g Grads) error {
	if g.W != nil && g.W.DType() != F32 {
		return fmt.Errorf("model: full-weight gradients need a float32 buffer, not %s", g.W.DType())
	}
	return nil
}

// BackwardHidden back-propagates the gradient w.r.t. the final hidden states that AddHeadGrad accumulated
// (none: zero) through the pass and adds the parameter gradients to g.
func (p *Pass) BackwardHidden(ctx context.Context, g Grads) error {
	if !p.opt.Keep {
		return errors.New("model: Backward needs a pass run with Keep")
	}
	if err := checkGradDType(g); err != nil {
		return err
	}
	c, ar := p.w.Cfg, p.opt.Arena
	D := c.Dim
	dhf := p.hiddenGrad()
	dx := ar.alloc(p.N * D)
	var dFinal []float32
	if g.W != nil {
		dFinal = g.W.FinalNorm
	}
	rmsNormBack(dx, dFinal, dhf, p.xOut, p.w.FinalNorm, p.rf, D, c.normOffset())
	sc := p.newBackScratch()
	for l := c.Layers - 1; l >= 0; l-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.blockBack(l, p.layers[l], dx, g, l > 0 || g.W != nil, sc)
	}
	if g.W != nil {
		if s := c.embedScale(); s != 1 {
			linalg.Scale(s, dx)
		}
		t := 0
		for _, toks := range p.seqs {
			for _, id := range toks {
				linalg.Axpy(1, dx[t*D:(t+1)*D], g.W.Embed.F32[id*D:(id+1)*D])
				t++
			}
		}
	}
	return nil
}

// blockBack turns dx (gradient w.r.t. the block output) into the gradient w.r.t. its input, in place.
// needDX=false skips the input gradient of the attention half (layer 0 without embedding gradients).
func (p *Pass) blockBack(l int, lc *layerCache, dx []float32, g Grads, needDX bool, sc *backScratch) {
	c := p.w.Cfg
	ly := &p.w.Layers[l]
	var gl *Layer
	if g.W != nil {
		gl = &g.W.Layers[l]
	}
	off := c.normOffset()
	// MLP: out = x2 + down(act(gate(h2))·up(h2)) (with SandwichNorm: x2 + norm(down(…))), h2 = norm(x2).
	da, dh2 := sc.da, sc.dh
	dOut := dx
	if c.SandwichNorm {
		clear(sc.dsub)
		rmsNormBack(sc.dsub, normGrad(gl, normPostMLP), dx, lc.d, ly.PostMLPNorm, lc.r4, c.Dim, off)
		dOut = sc.dsub
	}
	// The layer's h1, h2 and a shared one buffer in the forward pass (Pass.hbuf): each is recomputed here,
	// bit for bit, when a gradient reads it.
	if p.readsInput(ModDown, lc, g) {
		gatedActivation(c, lc.a, nil, lc.g, lc.u)
	}
	p.linearBack(l, ModDown, lc, lc.a, dOut, da, 0, g, true, nil)
	// The gate's and up's gradients replace their outputs (read for the last time here).
	dg, du := lc.g, lc.u
	if c.GeluTanh {
		gegluBack(dg, du, da, c.Hidden)
	} else {
		swigluBack(dg, du, da, c.Hidden)
	}
	if p.readsInput(ModGate, lc, g) || p.readsInput(ModUp, lc, g) {
		rmsNormApply(lc.h2, lc.x2, ly.MLPNorm, lc.r2, c.Dim, off)
	}
	sc.outers = sc.outers[:0]
	p.linearBack(l, ModGate, lc, lc.h2, dg, dh2, 0, g, true, &sc.outers)
	p.linearBack(l, ModUp, lc, lc.h2, du, dh2, 1, g, true, &sc.outers)
	linalg.AddOuters(p.N, c.Dim, lc.h2, c.Dim, sc.outers)
	rmsNormBack(dx, normGrad(gl, normMLP), dh2, lc.x2, ly.MLPNorm, lc.r2, c.Dim, off)
	// Attention: x2 = x + o(attn(rope(q(h1)), rope(k(h1)), v(h1))) (with SandwichNorm: x + norm(o(…))),
	// h1 = norm(x).
	datt, dq, dk, dv := sc.datt, sc.dq, sc.dk, sc.dv
	dOut = dx
	if c.SandwichNorm {
		clear(sc.dsub)
		rmsNormBack(sc.dsub, normGrad(gl, normPostAttn), dx, lc.o, ly.PostAttnNorm, lc.r3, c.Dim, off)
		dOut = sc.dsub
	}
	p.linearBack(l, ModO, lc, lc.att, dOut, datt, 0, g, true, nil)
	clear(dk)
	clear(dv)
	p.attentionBack(l, lc, datt, dq, dk, dv)
	p.w.ropeOf(l).applyRows(dq, dk, c.Heads, c.KVHeads, p.pos, true)
	if c.QKNorm { // back through the per-head norms to the projections' outputs
		var gq, gk []float32
		if gl != nil {
			gq, gk = gl.QNorm, gl.KNorm
		}
		clear(sc.dqr)
		clear(sc.dkr)
		rmsNormBack(sc.dqr, gq, dq, lc.qraw, ly.QNorm, lc.rq, c.HeadDim, off)
		rmsNormBack(sc.dkr, gk, dk, lc.kraw, ly.KNorm, lc.rk, c.HeadDim, off)
		dq, dk = sc.dqr, sc.dkr
	}
	if p.readsInput(ModQ, lc, g) || p.readsInput(ModK, lc, g) || p.readsInput(ModV, lc, g) {
		rmsNormApply(lc.h1, lc.x, ly.AttnNorm, lc.r1, c.Dim, off)
	}
	dh1 := sc.dh
	sc.outers = sc.outers[:0]
	p.linearBack(l, ModQ, lc, lc.h1, dq, dh1, 0, g, needDX, &sc.outers)
	p.linearBack(l, ModK, lc, lc.h1, dk, dh1, 1, g, needDX, &sc.outers)
	p.linearBack(l, ModV, lc, lc.h1, dv, dh1, 1, g, needDX, &sc.outers)
	linalg.AddOuters(p.N, c.Dim, lc.h1, c.Dim, sc.outers)
	if needDX {
		rmsNormBack(dx, normGrad(gl, normAttn), dh1, lc.x, ly.AttnNorm, lc.r1, c.Dim, off)
	}
}

// The norms of a layer, for normGrad.
const (
	normAttn = iota
	normMLP
	normPostAttn
	normPostMLP
)

// normGrad is the gradient buffer of a layer's norm gains (nil without full-weight gradients).
func normGrad(gl *Layer, which int) []float32 {
	if gl == nil {
		return nil
	}
	return [...][]float32{gl.AttnNorm, gl.MLPNorm, gl.PostAttnNorm, gl.PostMLPNorm}[which]
}

// readsInput says whether linearBack of projection m reads its input x: for full-weight gradients, or
// for the adapter's A gradient when no dropout kept a copy of its own.
func (p *Pass) readsInput(m int, lc *layerCache, g Grads) bool {
	return g.W != nil || g.L != nil && p.lora != nil && p.lora.Targets[m] && lc.xd[m] == nil
}

// linearBack propagates dy through projection m: dx = beta·dx + dy·W (+ LoRA path) when needDX, and adds
// dW = dyᵀ·x, dB = s·dyᵀ·u, dA = (s·dy·B)ᵀ·drop(x) to the requested gradients. With outers set and no
// dropout, dA is appended to it instead, for the caller to add together with the other projections' that
// read x (linalg.AddOuters: x read once).
//
// The adapter's du·A goes into dx with the product with the base (Mat.MulPlus: as it writes dx, where the
// base is held in the pair layout), unless the pass dropped x (the term is then masked).
func (p *Pass) linearBack(l, m int, lc *layerCache, x, dy, dx []float32, beta float32, g Grads, needDX bool, outers *[]linalg.OuterPart) {
	out, in := p.w.Cfg.Shape(m)
	N := p.N
	w := &p.w.Layers[l].W[m]
	adapted := p.lora != nil && p.lora.Targets[m]
	var du []float32
	if adapted {
		r, s := p.lora.Rank, p.lora.Scale()
		du = p.opt.Arena.dirty(N * r) // small: N × rank
		linalg.Sgemm(false, false, N, r, out, s, dy, out, p.lora.B[l][m], r, 0, du, r)
	}
	added := false // du·A in dx
	if needDX {
		if adapted && lc.mask[m] == nil {
			r := p.lora.Rank
			lr := linalg.LowRank{Rank: r, Alpha: 1, U: du, LDU: r, V: p.lora.A[l][m], LDV: in}
			w.MulPlus(N, dy, beta, dx, &lr)
			added = true
		} else {
			w.Mul(N, dy, beta, dx)
		}
		p.FlopsBwd += int64(2 * N * in * out)
	}
	if g.W != nil {
		linalg.Sgemm(true, false, out, in, N, 1, dy, out, x, in, 1, g.W.Layers[l].W[m].F32, in)
		p.FlopsBwd += int64(2 * N * in * out)
		if gb := g.W.Layers[l].Bias[m]; gb != nil {
			for r := 0; r < N; r++ {
				linalg.Axpy(1, dy[r*out:(r+1)*out], gb)
			}
		}
	}
	if !adapted {
		return
	}
	r, s := p.lora.Rank, p.lora.Scale()
	xd := x
	if lc.xd[m] != nil {
		xd = lc.xd[m]
	}
	if g.L != nil {
		linalg.Sgemm(true, false, out, r, N, s, dy, out, lc.lu[m], r, 1, g.L.B[l][m], r)
	}
	switch {
	case g.L != nil && outers != nil && lc.xd[m] == nil:
		*outers = append(*outers, linalg.OuterPart{Rows: r, Alpha: 1, U: du, LDU: r, C: g.L.A[l][m], LDC: in})
	case g.L != nil:
		linalg.Sgemm(true, false, r, in, N, 1, du, r, xd, in, 1, g.L.A[l][m], in)
	}
	p.FlopsBwd += int64(6 * N * r * (in + out))
	if !needDX || added {
		return
	}
	tmp := make([]float32, N*in) // dropout only
	linalg.Sgemm(false, false, N, in, r, 1, du, r, p.lora.A[l][m], in, 0, tmp, in)
	for i, v := range tmp {
		dx[i] += v * lc.mask[m][i]
	}
}

// attentionBack computes dq, dk, dv (post-RoPE) from datt. With A the softmax weights and dA = datt·vᵀ,
// the score gradient is dS = A ⊙ (dA − rowsum(A ⊙ dA)) (masked positions have A = 0, so the window
// needs nothing more), times 1 − tanh² of the uncapped scores when they are soft-capped (recomputed here
// rather than kept); dq = s·dS·k, dk += s·dSᵀ·q, dv += Aᵀ·datt. A sequence after a shared prefix adds its
// share of the prefix's dk, dv too. The heads of a key/value head go together, stacked as the forward pass
// stacked them (stackHeads). Work is split by (sequence, kv head); the prefix's share goes through a buffer
// of each sequence's own (below).
func (p *Pass) attentionBack(l int, lc *layerCache, datt, dq, dk, dv []float32) {
	c := p.w.Cfg
	G := c.Heads / c.KVHeads
	scale := c.attnScale()
	win := c.window(l)
	qd, kd, hd := c.QDim(), c.KVDim(), c.HeadDim
	// Units of work: one sequence over one key/value head. A sequence after a shared prefix adds its part of
	// the prefix's key and value gradients into a buffer of its own (at pg[s], P × head_dim values each for
	// dk and dv per head), summed into the prefix's rows afterwards in the sequences' order, so that the sums
	// do not depend on the schedule. A unit of a prefix with all the sequences after it (one per key/value
	// head) left a pass of one 8-rollout group with 3 units (SmolLM2's key/value heads) for 2 workers, and
	// one of them idle for a third of the attention's backward.
	pg := make([]int, len(p.seqs)+1)
	for s := range p.seqs {
		_, P := p.prefixRows(s)
		pg[s+1] = pg[s] + 2*P*hd*c.KVHeads
	}
	if cap(p.prefixGrads) < pg[len(p.seqs)] {
		p.prefixGrads = make([]float32, pg[len(p.seqs)])
	}
	parallel(len(p.seqs)*c.KVHeads, func(wk, i int) {
		s, kvh := i/c.KVHeads, i%c.KVHeads
		base, T := p.offs[s], p.offs[s+1]-p.offs[s]
		pb, P := p.prefixRows(s)
		W := P + T
		R := T * G // stacked rows
		A := lc.probs[s*c.KVHeads+kvh]
		n := 3*R*hd + R*W
		if c.AttnSoftcap > 0 {
			n += R * W
		}
		buf := p.workerScratch(wk, n)
		qs, ds, dqs := buf[:R*hd], buf[R*hd:2*R*hd], buf[2*R*hd:3*R*hd]
		dA, capped := buf[3*R*hd:3*R*hd+R*W], []float32(nil)
		if c.AttnSoftcap > 0 {
			capped = buf[3*R*hd+R*W:]
		}
		ho := kvh * G * hd // the group's first column in q, datt, dq
		stackHeads(qs, lc.q[base*qd+ho:], qd, T, G*hd)
		stackHeads(ds, datt[base*qd+ho:], qd, T, G*hd)
		k, v := lc.k[base*kd+kvh*hd:], lc.v[base*kd+kvh*hd:]
		kp, vp := lc.k[pb*kd+kvh*hd:], lc.v[pb*kd+kvh*hd:]
		blocks := causalBlocks(T)
		// dA, dS and dq block by block of query rows, as the forward pass (causalBlocks): rows r0..r1-1
		// have weights and gradients at the prefix and own positions before r1 only (dS is zero past each
		// row's own position, up to r1, which the key blocks below read).
		for _, b := range blocks {
			r0, r1 := b[0], b[1]
			rows := (r1 - r0) * G
			q, dt, da := qs[r0*G*hd:], ds[r0*G*hd:], dA[r0*G*W:]
			cols := attnBand(linalg.BandCols, r0, G) // stacked row i sees own keys to r0 + i/G
			if capped != nil {
				if P > 0 {
					linalg.Sgemm(false, true, rows, P, hd, scale, q, hd, kp, kd, 0, capped[r0*G*W:], W)
				}
				linalg.SgemmBand(false, true, rows, r1, hd, scale, q, hd, k, kd, 0, capped[r0*G*W+P:], W, cols)
			}
			if P > 0 {
				linalg.Sgemm(false, true, rows, P, hd, 1, dt, hd, vp, kd, 0, da, W)
			}
			linalg.SgemmBand(false, true, rows, r1, hd, 1, dt, hd, v, kd, 0, da[P:], W, cols)
			for r := r0; r < r1; r++ {
				a := P + r // the row's position, counting the prefix
				for g := range G {
					x := (r*G + g) * W
					ar, dr := A[x:x+a+1], dA[x:x+P+r1]
					// rowsum(A ⊙ dA) = Σⱼ Aⱼ·(datt·vⱼ) = datt·(Σⱼ Aⱼ·vⱼ): the row's output gradient dotted with
					// its output, head_dim values where the weights' row has a + 1 (FlashAttention's D).
					y := (base+r)*qd + ho + g*hd
					dot := linalg.Dot(datt[y:y+hd], lc.att[y:y+hd])
					linalg.MulShift(dr[:a+1], ar, dot)
					clear(dr[a+1:])
					if capped != nil {
						lo := windowStart(a, win)
						cr := capped[x+lo : x+a+1]
						softcap(cr, c.AttnSoftcap)
						softcapBack(dr[lo:a+1], cr, c.AttnSoftcap)
					}
				}
			}
			var beta float32
			if P > 0 {
				linalg.Sgemm(false, false, rows, hd, P, scale, da, W, kp, kd, 0, dqs[r0*G*hd:], hd)
				beta = 1
			}
			linalg.SgemmBand(false, false, rows, hd, r1, scale, da[P:], W, k, kd, beta, dqs[r0*G*hd:], hd,
				attnBand(linalg.BandKEnd, r0, G))
		}
		unstackHeads(dq[base*qd+ho:], qd, dqs, T, G*hd)
		// dk and dv by blocks of key positions c0..c1-1, which only the queries from c0 on see: the
		// contraction runs over their stacked rows, (T − c0)·group of them (blocks of queries would make
		// it a block's rows, too short for the kernel).
		keys := attnBand(linalg.BandKStart, 0, G) // key c0+i sees the stacked rows from i·G on
		for _, b := range blocks {
			c0, c1 := b[0], b[1]
			linalg.SgemmBand(true, false, c1-c0, hd, (T-c0)*G, scale, dA[c0*G*W+P+c0:], W, qs[c0*G*hd:], hd, 1, dk[base*kd+kvh*hd+c0*kd:], kd, keys)
			linalg.SgemmBand(true, false, c1-c0, hd, (T-c0)*G, 1, A[c0*G*W+P+c0:], W, ds[c0*G*hd:], hd, 1, dv[base*kd+kvh*hd+c0*kd:], kd, keys)
		}
		if P > 0 { // every query of the sequence sees the prefix
			g := p.prefixGrads[pg[s]+2*kvh*P*hd:]
			linalg.Sgemm(true, false, P, hd, R, scale, dA, W, qs, hd, 0, g, hd)
			linalg.Sgemm(true, false, P, hd, R, 1, A, W, ds, hd, 0, g[P*hd:], hd)
		}
	})
	if p.prefix != nil {
		parallel(c.KVHeads, func(_, kvh int) {
			for s := range p.seqs {
				pb, P := p.prefixRows(s)
				g := p.prefixGrads[pg[s]+2*kvh*P*hd:]
				for r := range P {
					o := (pb+r)*kd + kvh*hd
					linalg.Axpy(1, g[r*hd:(r+1)*hd], dk[o:o+hd])
					linalg.Axpy(1, g[(P+r)*hd:(P+r+1)*hd], dv[o:o+hd])
				}
			}
		})
	}
	p.FlopsBwd += 8 * p.attentionPairs()
}

// backScratch holds the per-layer gradient buffers, reused by every layer of one Backward.
type backScratch struct {
	da, dh, datt, dq, dk, dv []float32
	dqr, dkr                 []float32          // QKNorm: gradients w.r.t. the projections' outputs
	dsub                     []float32          // SandwichNorm: gradient w.r.t. a sublayer's output before its norm
	outers                   []linalg.OuterPart // adapters' A gradients of the projections that read one input
}

func (p *Pass) newBackScratch() *backScratch {
	c, ar, N := p.w.Cfg, p.opt.Arena, p.N
	sc := &backScratch{da: ar.dirty(N * c.Hidden),
		dh: ar.dirty(N * c.Dim), datt: ar.dirty(N * c.QDim()), dq: ar.dirty(N * c.QDim()),
		dk: ar.dirty(N * c.KVDim()), dv: ar.dirty(N * c.KVDim())}
	if c.QKNorm {
		sc.dqr, sc.dkr = ar.dirty(N*c.QDim()), ar.dirty(N*c.KVDim())
	}
	if c.SandwichNorm {
		sc.dsub = ar.dirty(N * c.Dim)
	}
	return sc
}
