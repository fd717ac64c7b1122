package serving

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkConstraintAllow measures the per-token cost of computing the allowed-token mask (264 ids)
// in the middle of a JSON string, the common state of a constrained completion.
func BenchmarkConstraintAllow(b *testing.B) {
	m, _ := feedJSON(`{"key":[1,2,{"x":"abc`)
	c := newConstraint(jsonGrammar{m}, 1000, []int{256, 258})
	mask := make([]bool, 264)
	b.ReportAllocs()
	for b.Loop() {
		c.Allow(mask)
	}
}

// perByte hides a grammar's byteRunner, so tokenGrammar steps it one boxed byte at a time (how every
// multi-byte token was checked before byteRunner).
type perByte struct{ grammar }

// BenchmarkConstraintAllowBPE measures one mask over a 150k-token vocabulary of 1–8-byte tokens (the size
// of Qwen3's and Llama 3's) inside the arguments of a forced tool call.
func BenchmarkConstraintAllowBPE(b *testing.B) {
	const vocab = 150000
	rng := rand.New(rand.NewPCG(1, 2))
	toks := make([][]byte, vocab)
	for i := range toks {
		if i < 256 {
			toks[i] = []byte{byte(i)}
			continue
		}
		t := make([]byte, 1+rng.IntN(8))
		for j := range t {
			t[j] = byte(' ' + rng.IntN(95))
		}
		toks[i] = t
	}
	v := &grammarVocab{bytes: func(id int) []byte { return toks[id] }, added: func(int) bool { return false }, pass: [2]int{-1, -1}}
	var g grammar = newJSONCallGrammar([]string{"get_weather", "search"})
	for _, c := range []byte(`{"name": "get_weather", "parameters": {"city": "Os`) {
		g, _ = g.next(int(c))
	}
	for _, bc := range []struct {
		name string
		g    grammar
	}{{"byte-runner", g}, {"boxed-per-byte", perByte{g}}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newConstraint(tokenGrammar{g: bc.g, v: v}, 1000, nil)
			mask := make([]bool, vocab)
			b.ReportAllocs()
			for b.Loop() {
				c.Allow(mask)
			}
		})
	}
}
