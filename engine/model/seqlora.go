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
	type run struct{ s, e int }
	var runs []run
	for s := 0; s < len(p.seqLoRA); {
		e := s + 1
		for e < len(p.seqLoRA) && p.seqLoRA[e] == p.seqLoRA[s] {
			e++
		}
		if a := p.seqLoRA[s]; a != nil && a.Targets[m] {
			runs = append(runs, run{s, e})
			n := p.offs[e] - p.offs[s]
			p.FlopsFwd += int64(2*n*a.Rank*in + 2*n*out*a.Rank)
		}
		s = e
	}
	R := maxRank(p.seqLoRA, m) // lc.lu[m] holds N rows of R
	// Each run's products are a few rows by the rank, too small to split; the runs write their own rows,
	// so they go side by side (one after another they left a core idle for a tenth of a decoding step of 4
	// adapters).
	do := func(_, i int) {
		a := p.seqLoRA[runs[i].s]
		r0, n, r := p.offs[runs[i].s], p.offs[runs[i].e]-p.offs[runs[i].s], a.Rank
		u := lc.lu[m][r0*R : r0*R+n*r] // rows of the widest rank: runs of other ranks side by side stay apart
		linalg.Sgemm(false, true, n, r, in, 1, x[r0*in:], in, a.A[l][m], in, 0, u, r)
		linalg.Sgemm(false, true, n, out, r, a.Scale(), u, r, a.B[l][m], r, 1, y[r0*out:], out)
	}
	if len(runs) == 1 {
		do(0, 0)
		return
	}
	parallel(len(runs), do)
}
