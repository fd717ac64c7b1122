package model

import "github.com/trainyard/trainyard/engine/linalg"

// Passes over sequences of different adapters (ExtendAdapters, DecodeAdapters): the base product of
// each projection is computed once for every row of the batch, then each run of consecutive sequences on
// the same adapter adds that adapter's low-rank term to its rows, as S-LoRA and Punica do on GPUs. The
// weights are read once per step whatever the number of adapters in it, and a sequence's result is the one
// of a pass with its adapter alone, up to the rounding of the kernels for a different row count.

// maxRank is the largest rank among the adapters that adapt projection m (0: none does).
func maxRank(adapters []*LoRA, m int) int {
	r := 0
	for _, a := range adapters {
		if a != nil && a.Targets[m] {
			r = max(r, a.Rank)
		}
	}
	return r
}

// seqAdapters adds each sequence's adapter term of projection m of layer l to its rows of y.
func (p *Pass) seqAdapters(l, m int, lc *layerCache, x, y []float32) {
	out, in := p.w.Cfg.Shape(m)
	// A piece is rows r0 .. r0+n-1, all on adapter a.
	type piece struct {
		a     *LoRA
		r0, n int
	}
	var pieces []piece
	for s := 0; s < len(p.seqLoRA); {
		e := s + 1
		for e < len(p.seqLoRA) && p.seqLoRA[e] == p.seqLoRA[s] {
			e++
		}
		if a := p.seqLoRA[s]; a != nil && a.Targets[m] {
			n := p.offs[e] - p.offs[s]
			pieces = append(pieces, piece{a, p.offs[s], n})
			p.FlopsFwd += int64(2*n*a.Rank*in + 2*n*out*a.Rank)
		}
		s = e
	}
	// A decoding batch on one adapter is one run of a few dozen rows, whose two products are too small for
	// the kernels to split: one core did all of them while the other waited, 6% of a decoding step of 32
	// rollouts. Such a run is cut into one piece per core.
	if w := maxWorkers(); len(pieces) == 1 && w > 1 && pieces[0].n >= 2*minAdapterRows {
		one := pieces[0]
		w = min(w, one.n/minAdapterRows)
		pieces = pieces[:0]
		for i := range w {
			lo, hi := one.n*i/w, one.n*(i+1)/w
			pieces = append(pieces, piece{one.a, one.r0 + lo, hi - lo})
		}
	}
	R := maxRank(p.seqLoRA, m) // lc.lu[m] holds N rows of R
	// Each piece's products are a few rows by the rank, too small to split; the pieces write their own
	// rows, so they go side by side (one after another they left a core idle for a tenth of a decoding step
	// of 4 adapters).
	do := func(_, i int) {
		pc := pieces[i]
		a, r0, n, r := pc.a, pc.r0, pc.n, pc.a.Rank
		u := lc.lu[m][r0*R : r0*R+n*r] // rows of the widest rank: pieces of other ranks side by side stay apart
		linalg.Sgemm(false, true, n, r, in, 1, x[r0*in:], in, a.A[l][m], in, 0, u, r)
		linalg.Sgemm(false, true, n, out, r, a.Scale(), u, r, a.B[l][m], r, 1, y[r0*out:], out)
	}
	if len(pieces) == 1 {
		do(0, 0)
		return
	}
	parallel(len(pieces), do)
}

// minAdapterRows is the fewest rows seqAdapters gives a core of its own.
const minAdapterRows = 8
