package serving

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkConstraintAllow measures the per-token cost of computing the allowed-token mask (264 ids)
// in the middle of a JSON string, the common state of a constrained completion.
func BenchmarkConstraintAllow(b *testing.B) {
	m, _ := feedJSON(`{"key":[1,2,{"x":"abc`)
	c := newConstraint(byteTokens(jsonGrammar{m}), 1000, []int{256, 258})
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
	v := newGrammarVocab(vocab, func(id int) []byte { return toks[id] }, func(int) bool { return false }, [2]int{-1, -1})
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

// BenchmarkConstraintAllowQwen3 measures one mask over Qwen3's real vocabulary (151,936 ids) in the
// states a forced tool call goes through, with the trie (what Allow does) and checking every token on its
// own (the brute force Allow did before the trie, kept as the tests' reference).
func BenchmarkConstraintAllowQwen3(b *testing.B) {
	base := openTokenizerBase(b, "qwen3")
	v := vocabOf(base)
	start, end, _ := base.ToolCallTokens()
	ids := func(s string) []int { return base.Tokenizer().Encode(s) }
	for _, st := range []struct{ name, prefix string }{
		{"open", ""},              // only <tool_call> may come
		{"name", `{"name":"get_`}, // inside the name: a few tokens
		{"value", `{"name":"get_weather","arguments":{"city":`},     // a value starts
		{"string", `{"name":"get_weather","arguments":{"city":"Os`}, // inside a string: most tokens
	} {
		g := onTokens(newToolCallGrammar(start, end, []string{"get_weather", "search"}, true), v)
		var m masker = g
		if st.prefix != "" {
			walk := append([]int{start}, ids(st.prefix)...)
			for _, id := range walk {
				n, ok := m.next(id)
				if !ok {
					b.Fatalf("%q refused at token %d", st.prefix, id)
				}
				m = n.(masker)
			}
		}
		c := newConstraint(m, 1000, base.StopTokens())
		mask := make([]bool, base.VocabSize())
		// Named key=value, so `benchstat -col /impl` sets the two side by side.
		b.Run("state="+st.name, func(b *testing.B) {
			b.Run("impl=trie", func(b *testing.B) {
				for b.Loop() {
					c.Allow(mask)
				}
			})
			b.Run("impl=brute-force", func(b *testing.B) {
				for b.Loop() {
					bruteForceAllow(c.g, c.left, c.stops, mask)
				}
			})
		})
	}
}

// BenchmarkGrammarVocabQwen3 measures building a base's vocabulary for grammars (the trie and its
// string-content flags), which bases does once per base model, on its first constrained request.
func BenchmarkGrammarVocabQwen3(b *testing.B) {
	base := openTokenizerBase(b, "qwen3")
	b.ReportAllocs()
	for b.Loop() {
		vocabOf(base)
	}
}
