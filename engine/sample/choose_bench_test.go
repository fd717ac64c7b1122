package sample

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkChoose measures choosing one token from a Qwen-sized vocabulary (151,936 logits): the
// log-probabilities every token carries, and a draw at temperature 1 as RL rollouts sample, without and
// with nucleus sampling; "ignore_eos" bans Qwen3's two end-of-turn ids as a Banner (the service's
// ignore_eos) and "ignore_eos-mask" as a mask over the vocabulary.
func BenchmarkChoose(b *testing.B) {
	const V = 151936
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, V)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 2) // a random-weight model's spread
	}
	for _, c := range []struct {
		name string
		p    Params
		con  Constraint
	}{
		{"t1", Params{Temperature: 1, N: 1}, nil},
		{"t0.7", Params{Temperature: 0.7, N: 1}, nil},
		{"t1-top_p0.9", Params{Temperature: 1, TopP: 0.9, N: 1}, nil},
		{"greedy", Params{Temperature: 0, N: 1}, nil},
		{"ignore_eos", Params{Temperature: 1, N: 1}, banned{151643, 151645}},
		{"ignore_eos-mask", Params{Temperature: 1, N: 1}, forbid{151643: true, 151645: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := &state{rng: rand.New(rand.NewPCG(3, 4)), logits: logits, con: c.con}
			for b.Loop() {
				s.choose(c.p)
			}
		})
	}
}
