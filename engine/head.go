package engine

import (
	"runtime"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/train"
	"github.com/trainyard/trainyard/internal/prefault"
)

// headChunkBytes bounds the logits held at once, and headChunkMaxRows the rows. Every chunk streams the
// whole head matrix (vocabulary × hidden, 175 MB in bf16 for Qwen's 151,936 ids at 576 wide), so chunks of
// few rows make the head memory-bound: 128 MiB is 220 rows of Qwen's vocabulary (a third of the weight
// traffic of 55-row chunks), 128 of Gemma 3's 262,144; smaller vocabularies stop at 256 rows.
const (
	headChunkBytes   = 128 << 20
	headChunkMaxRows = 256
)

// headChunkRows is the number of rows whose logits are materialised at once.
func headChunkRows(vocab int) int { return max(8, min(headChunkMaxRows, headChunkBytes/(4*vocab))) }

// coefFunc returns ∂loss/∂logp for rows lo..hi of a head evaluation, given those rows' logprobs and
// entropies.
type coefFunc func(lo, hi int, st train.TokenStats) ([]float64, error)

// head evaluates the output head of p on rows (predicting targets) one chunk of rows at a time and returns
// every row's target logprob and entropy; the full [rows × vocab] logit matrix never exists. With coef set,
// each chunk's loss gradient is back-propagated into the pass (model.Pass.AddHeadGrad, ready for
// BackwardHidden) before the chunk's logits are dropped.
func (t *Trainer) head(p *model.Pass, rows, targets []int, coef coefFunc) (train.TokenStats, error) {
	V := t.base.w.Cfg.VocabSize
	n := headChunkRows(V)
	if t.headRows > 0 {
		n = t.headRows
	}
	if need := min(n, len(rows)) * V; len(t.mem.logits) < need {
		t.mem.logits = make([]float32, need)
		prefault.Slice(t.mem.logits)
	}
	all := train.TokenStats{Logprob: make([]float64, len(rows)), Entropy: make([]float64, len(rows))}
	for lo := 0; lo < len(rows); lo += n {
		hi := min(lo+n, len(rows))
		logits := p.LogitsInto(t.mem.logits, rows[lo:hi])
		// With a gradient to form, the statistics, the coefficients and the gradient go a row per worker at
		// a time, so that LogprobGrad finds each row in the core's L2 where Stats left it (600 KB at Qwen3's
		// vocabulary) instead of reading the chunk's logits (134 MB, stored past the caches) from memory a
		// second time. Without one, Stats takes the whole chunk.
		sub := hi - lo
		if coef != nil {
			sub = runtime.GOMAXPROCS(0)
		}
		for r0 := lo; r0 < hi; r0 += sub {
			r1 := min(r0+sub, hi)
			part := logits[(r0-lo)*V : (r1-lo)*V]
			st := train.Stats(part, V, targets[r0:r1])
			copy(all.Logprob[r0:], st.Logprob)
			copy(all.Entropy[r0:], st.Entropy)
			if coef == nil {
				continue
			}
			c, err := coef(r0, r1, st)
			if err != nil {
				return all, err
			}
			train.LogprobGrad(part, V, targets[r0:r1], c, st.LogSum)
		}
		if coef != nil {
			p.AddHeadGrad(rows[lo:hi], logits, model.Grads{L: t.grads})
		}
	}
	return all, nil
}
