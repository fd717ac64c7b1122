package engine

import (
	"slices"

	"github.com/trainyard/trainyard/engine/model"
)

// A group of RL rollouts is one prompt and several completions: trained as written, every rollout runs the
// prompt through the model again (38% of the tokens of 4 groups × 8 rollouts of a 100-token prompt and
// 128-token completions). The trainer finds the leading tokens that sequences share and that predict no
// trainable token, and passes them once, as a prefix the sequences after it attend to
// (model.PassOptions.Prefix): the loss and gradients are those of the sequences written out.

// minSharedPrefix is the shortest run of leading tokens worth a pass sequence of its own.
const minSharedPrefix = 16

// passSeq is one sequence of a training pass: seqs[si].Tokens[from:] after the pass sequence prefix
// (−1: none), or, with si = −1, a prefix that the pass sequences after it share.
type passSeq struct {
	si, from, prefix int
	toks             []int
}

// family is sequences whose first n tokens are the same and may be shared (n = 0: passed whole).
type family struct {
	members []int
	n       int
}

// shareable is how many leading tokens of s may be shared with other sequences: those whose rows predict
// no trainable token (up to the row before the first trainable token's), at least one token kept its own.
func shareable(s Sequence) int {
	for j := 1; j < len(s.Tokens); j++ {
		if s.Trainable[j] {
			return j - 1
		}
	}
	return len(s.Tokens) - 1
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// prefixFamilies groups the sequences into families by shared leading tokens. With share, it goes through
// them in the order of their tokens, so that sequences with the same prompt are next to each other whatever
// order they came in: a sequence joins the family before it when it starts with the family's shared run, or
// makes a second member of a family of one, shortening the run to what the two share (at least
// minSharedPrefix tokens); otherwise it starts a family of its own. So groups whose prompts share a system
// prompt stay families of their own prompt, not one family of the system prompt. Without share, every
// sequence is a family of its own, in order.
func prefixFamilies(seqs []Sequence, share bool) []family {
	order := make([]int, len(seqs))
	for i := range order {
		order[i] = i
	}
	if share {
		slices.SortStableFunc(order, func(a, b int) int { return slices.Compare(seqs[a].Tokens, seqs[b].Tokens) })
	}
	var fams []family
	for _, i := range order {
		s := seqs[i]
		if share && len(fams) > 0 {
			fm := &fams[len(fams)-1]
			first := seqs[fm.members[0]]
			l := min(commonPrefix(first.Tokens, s.Tokens), shareable(s), shareable(first))
			if len(fm.members) > 1 && l >= fm.n || len(fm.members) == 1 && l >= minSharedPrefix {
				if len(fm.members) == 1 {
					fm.n = l
				}
				fm.members = append(fm.members, i)
				continue
			}
		}
		fams = append(fams, family{members: []int{i}})
	}
	return fams
}

// microBatches splits seqs into the sequences of consecutive training passes whose memory fits the
// activation budget (a sequence that alone does not fit forms its own pass). With share, sequences that
// start with the same tokens share them (prefixFamilies): a pass holds the shared prefix once, before the
// family's members in it, and a family that fits one pass is not split across two.
func (t *Trainer) microBatches(seqs []Sequence, share bool) [][]passSeq {
	l, c := t.adapter.lora, t.base.w.Cfg
	bytes := func(T, P int) int64 { return model.TrainSeqBytes(c, l.Rank, l.Targets, l.Dropout > 0, T, P) }
	var out [][]passSeq
	var cur []passSeq
	var used int64
	for _, f := range prefixFamilies(seqs, share) {
		root := -1 // the family's prefix in cur
		if len(f.members) > 1 && len(cur) > 0 {
			// A family that fits a pass of its own is not split across two: the second would pass its
			// prefix again.
			need := bytes(f.n, 0)
			for _, si := range f.members {
				need += bytes(len(seqs[si].Tokens)-f.n, f.n)
			}
			if used+need > t.budget && need <= t.budget {
				out, cur, used = append(out, cur), nil, 0
			}
		}
		for _, si := range f.members {
			toks := seqs[si].Tokens
			if len(f.members) == 1 {
				need := bytes(len(toks), 0)
				if len(cur) > 0 && used+need > t.budget {
					out, cur, used = append(out, cur), nil, 0
				}
				cur, used = append(cur, passSeq{si: si, prefix: -1, toks: toks}), used+need
				continue
			}
			need := bytes(len(toks)-f.n, f.n)
			if root < 0 {
				need += bytes(f.n, 0)
			}
			if len(cur) > 0 && used+need > t.budget {
				out, cur, used = append(out, cur), nil, 0
				if root >= 0 {
					root, need = -1, need+bytes(f.n, 0)
				}
			}
			if root < 0 {
				root = len(cur)
				cur = append(cur, passSeq{si: -1, prefix: -1, toks: toks[:f.n]})
			}
			cur, used = append(cur, passSeq{si: si, from: f.n, prefix: root, toks: toks[f.n:]}), used+need
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
