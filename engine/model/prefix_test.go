package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"
)

// TestPrefixPass: sequences that name a shared prefix (PassOptions.Prefix) give the logits and the LoRA
// gradients of the same sequences with the prefix written out in front of each, for every architecture
// (sliding windows that cross the prefix's end and soft-capping included), with causal blocks of 16 rows
// and of the whole sequence, beside a sequence of its own. The loss is on the sequences' own rows only; the
// prefix's rows get their gradient through the keys and values the sequences after it read.
func TestPrefixPass(t *testing.T) {
	defer func(b int) { attnBlock = b }(attnBlock)
	rng := rand.New(rand.NewSource(4))
	toks := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = rng.Intn(tinyConfig().VocabSize)
		}
		return s
	}
	prefix, other := toks(37), toks(29)
	suffixes := [][]int{toks(20), toks(45), toks(1), toks(33)}
	// The shared pass: the prefix, two sequences after it, the other sequence, two more after the prefix.
	shared := [][]int{prefix, suffixes[0], suffixes[1], other, suffixes[2], suffixes[3]}
	parents := []int{-1, 0, 0, -1, 0, 0}
	// The same written out: each suffix with the prefix in front.
	var full [][]int
	for _, s := range shared {
		if len(s) == len(prefix) && &s[0] == &prefix[0] {
			continue
		}
		if &s[0] == &other[0] {
			full = append(full, other)
			continue
		}
		full = append(full, append(append([]int(nil), prefix...), s...))
	}
	for name, cfg := range archConfigs() {
		cfg.MaxSeqLen = 128
		w := randomModel(t, cfg, 5)
		lora := randomLoRA(t, cfg, 3, 6, 0, rng)
		// run returns the logits of every row of the sequences after the prefix (and of the other one)
		// and the LoRA gradients of a loss on those rows.
		run := func(seqs [][]int, prefixes []int, skip func(s int) int) ([]float32, []float32) {
			p, err := w.Forward(context.Background(), seqs, PassOptions{LoRA: lora, Keep: true, Prefix: prefixes})
			if err != nil {
				t.Fatal(err)
			}
			var rows []int
			for s := range seqs {
				for r := p.Offsets()[s] + skip(s); r < p.Offsets()[s+1]; r++ {
					rows = append(rows, r)
				}
			}
			return headLossGrads(t, p, rows, lora, cfg)
		}
		for _, block := range []int{16, 1 << 30} {
			attnBlock = block
			wantL, wantG := run(full, nil, func(s int) int {
				if len(full[s]) == len(other) {
					return 0
				}
				return len(prefix)
			})
			gotL, gotG := run(shared, parents, func(s int) int {
				if s == 0 {
					return len(prefix) // the prefix's rows: none
				}
				return 0
			})
			what := fmt.Sprintf("%s, blocks of %d, prefix shared against written out:", name, block)
			closeScaled(t, what+" logit", gotL, wantL, 2e-5)
			closeScaled(t, what+" LoRA gradient", gotG, wantG, 2e-5)
		}
	}
}

// TestPrefixPassInput: a prefix must be an earlier sequence without one of its own, one entry per
// sequence, and a sequence with its prefix must fit the context.
func TestPrefixPassInput(t *testing.T) {
	cfg := tinyConfig()
	cfg.MaxSeqLen = 16
	w := randomModel(t, cfg, 1)
	seqs := [][]int{{1, 2, 3}, {4, 5}, {6}}
	for _, prefixes := range [][]int{{-1, 0}, {-1, 2, -1}, {-1, 0, 1}, {0, -1, -1}, {-1, 1, -1}} {
		if _, err := w.Forward(context.Background(), seqs, PassOptions{Prefix: prefixes}); !errors.Is(err, ErrInput) {
			t.Errorf("prefixes %v: err %v, want ErrInput", prefixes, err)
		}
	}
	long := [][]int{make([]int, 10), make([]int, 7)}
	if _, err := w.Forward(context.Background(), long, PassOptions{Prefix: []int{-1, 0}}); !errors.Is(err, ErrInput) {
		t.Errorf("17 positions in a context of 16: err %v, want ErrInput", err)
	}
	if _, err := w.Forward(context.Background(), long[:1], PassOptions{Prefix: []int{-1}}); err != nil {
		t.Errorf("no sequence after the prefix: %v", err)
	}
}
