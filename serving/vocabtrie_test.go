package serving

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
)

// testByteVocab is the byte vocabulary of the grammar tests: 264 ids, 0..255 the bytes, the rest added
// tokens, the tool-call markers (testCallStart, testCallEnd) read whole, as on the engine's byte-level
// tokenizer.
var testByteVocab = sync.OnceValue(func() *grammarVocab {
	return newGrammarVocab(264, func(id int) []byte {
		if id < 256 {
			return []byte{byte(id)}
		}
		return []byte(fmt.Sprintf("<special_%d>", id))
	}, func(id int) bool { return id >= 256 }, [2]int{testCallStart, testCallEnd})
})

// byteTokens runs a grammar over byte tokens on testByteVocab.
func byteTokens(g grammar) tokenGrammar { return onTokens(g, testByteVocab()) }

// bruteForceAllow is the reference for constraint.Allow, what it computed before the trie: every id of
// the mask checked on its own with try, the end-of-turn tokens allowed once the sentence is complete.
func bruteForceAllow(g grammar, left int, stops []int, mask []bool) {
	for id := range mask {
		if slices.Contains(stops, id) {
			mask[id] = g.done()
			continue
		}
		cost, ok := g.try(id)
		mask[id] = ok && cost+1 <= left-1
	}
}

// firstDifference returns the first id where the masks differ, or -1.
func firstDifference(a, b []bool) int {
	for id := range a {
		if a[id] != b[id] {
			return id
		}
	}
	return -1
}

// TestTokenTrieHoldsEveryToken: the trie of a vocabulary with shared prefixes, prefixes that are tokens
// themselves, duplicates, empty and skipped ids holds each kept token exactly once, at the node its bytes
// lead to, and nothing else.
func TestTokenTrieHoldsEveryToken(t *testing.T) {
	t.Parallel()
	toks := []string{"ab", "a", "", "abc", "b", "ab", "skip", "abd", "\xff", "b\x00", "a"}
	tr := newTokenTrie(len(toks), func(id int) []byte { return []byte(toks[id]) }, func(id int) bool { return toks[id] == "skip" })
	found := map[int32]string{}
	var walk func(node int32, prefix string)
	walk = func(node int32, prefix string) {
		for _, id := range tr.ids[tr.nodes[node].tok:tr.nodes[node+1].tok] {
			if _, dup := found[id]; dup {
				t.Fatalf("token %d found twice", id)
			}
			found[id] = prefix
		}
		for c := node + 1; c < tr.nodes[node].end; c = tr.nodes[c].end {
			walk(c, prefix+string([]byte{tr.nodes[c].b}))
		}
	}
	walk(0, "")
	for id, s := range toks {
		got, ok := found[int32(id)]
		if want := s != "" && s != "skip"; ok != want || ok && got != s {
			t.Errorf("token %d %q: found %v at %q", id, s, ok, got)
		}
	}
	if n := len(tr.nodes); n != 1+7+1 { // root, a b c d b \x00 \xff, sentinel
		t.Errorf("%d nodes, want 9", n)
	}
}

// TestTrieMaskMatchesBruteForceSynthetic compares the masks on a random vocabulary full of shared
// prefixes and duplicates (a small alphabet), along random walks of every grammar kind.
func TestTrieMaskMatchesBruteForceSynthetic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	const size = 3000
	alphabet := []byte(`{}[]":, 0123456789.-eE+truefalsn\u00abgt_wh` + "\t\n\xc3\xa9\xe2\x82\xac\xf0\x9f")
	toks := make([][]byte, size)
	for id := range toks {
		switch {
		case id < 256:
			toks[id] = []byte{byte(id)}
		case id >= 2990:
			toks[id] = []byte(fmt.Sprintf("<added_%d>", id)) // added: stops, markers, think
		default:
			tok := make([]byte, 1+rng.IntN(6))
			for i := range tok {
				tok[i] = alphabet[rng.IntN(len(alphabet))]
			}
			toks[id] = tok
		}
	}
	const callStart, callEnd, thinkStart, thinkEnd, stop = 2990, 2991, 2992, 2993, 2994
	tokenBytes := func(id int) []byte {
		if id < 0 || id >= size {
			return nil // the model's ids past the tokenizer's, as hf.Tokenizer.TokenBytes answers
		}
		return toks[id]
	}
	v := newGrammarVocab(size, tokenBytes, func(id int) bool { return id >= 2990 }, [2]int{callStart, callEnd})
	names := []string{"get_weather", "get", "search_web"}
	for _, k := range grammarKinds(v, callStart, callEnd, thinkStart, thinkEnd, names) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(15, 16))
			for range 40 {
				compareWalk(t, k.g, size+10, []int{stop, size + 5}, minBudget(k.g)+rng.IntN(40), rng, func(id int) string {
					return string(tokenBytes(id))
				})
			}
		})
	}
}

type grammarKind struct {
	name string
	g    masker
}

// grammarKinds are the grammars a constraint runs, on vocabulary v: a JSON object, a Llama 3 call, tool
// calls in <tool_call> blocks (when the vocabulary has them), the latter two after a think block that may
// open and one that the prompt opened (when it has think tokens), and a grammar without a by-value byte
// state (the trie walk's fallback).
func grammarKinds(v *grammarVocab, callStart, callEnd, thinkStart, thinkEnd int, names []string) []grammarKind {
	json := onTokens(jsonGrammar{}, v)
	call := onTokens(newJSONCallGrammar(names), v)
	kinds := []grammarKind{{"json", json}, {"json-call", call}, {"json-boxed", onTokens(reboxed{jsonGrammar{}}, v)}}
	if callStart >= 0 {
		call = onTokens(newToolCallGrammar(callStart, callEnd, names, true), v)
		kinds = append(kinds, grammarKind{"tool-calls", call},
			grammarKind{"named-tool-call", onTokens(newToolCallGrammar(callStart, callEnd, names[:1], false), v)})
	}
	if thinkStart >= 0 {
		kinds = append(kinds,
			grammarKind{"think-optional-call", afterReasoning{start: thinkStart, end: thinkEnd, g: call}},
			grammarKind{"think-inside-json", afterReasoning{start: thinkStart, end: thinkEnd, g: json, phase: reasonInside}})
	}
	return kinds
}

// compareWalk walks one random path through g under a constraint of the given budget and compares the
// constraint's mask over a vocabulary of size ids with the brute-force one before every token. Tokens are
// drawn among the allowed ones, half the time among the single-byte ones and the whole tokens (markers,
// end of turn), which drive the structure, so walks reach every phase of the grammars.
func compareWalk(t *testing.T, g masker, size int, stops []int, budget int, rng *rand.Rand, text func(int) string) {
	t.Helper()
	c := newConstraint(g, budget, stops)
	mask, want := make([]bool, size), make([]bool, size)
	var out []int
	for {
		c.Allow(mask)
		bruteForceAllow(c.g, c.left, c.stops, want)
		if id := firstDifference(mask, want); id >= 0 {
			t.Fatalf("after %q (%v): token %d %q allowed %v, brute force says %v", walkText(out, text), out, id,
				text(id), mask[id], want[id])
		}
		var allowed, short []int
		for id, ok := range mask {
			if ok {
				allowed = append(allowed, id)
				if s := text(id); len(s) <= 1 || s[0] == '<' && s[len(s)-1] == '>' {
					short = append(short, id)
				}
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("no token allowed after %q (budget %d)", walkText(out, text), budget)
		}
		pick := allowed
		if len(short) > 0 && rng.IntN(2) == 0 {
			pick = short
		}
		id := pick[rng.IntN(len(pick))]
		if slices.Contains(stops, id) {
			if len(out)+1 > budget {
				t.Fatalf("%d tokens plus the stop exceed the budget %d", len(out), budget)
			}
			return
		}
		out = append(out, id)
		c.Advance(id)
	}
}

func walkText(ids []int, text func(int) string) string {
	s := ""
	for _, id := range ids {
		s += text(id)
	}
	return s
}

// TestTrieMaskMatchesBruteForce compares the masks on the real Qwen3 and Llama 3 vocabularies (151,936
// and 128,256 ids with the models' padding), along random walks of every grammar kind each model runs,
// before every token.
func TestTrieMaskMatchesBruteForce(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"qwen3", "llama3"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			base := openTokenizerBase(t, model)
			v := vocabOf(base)
			callStart, callEnd, ok := base.ToolCallTokens()
			if !ok {
				callStart, callEnd = -1, -1
			}
			thinkStart, thinkEnd, ok := base.ThinkTokens()
			if !ok {
				thinkStart, thinkEnd = -1, -1
			}
			text := func(id int) string { return string(base.TokenBytes(id)) }
			for i, k := range grammarKinds(v, callStart, callEnd, thinkStart, thinkEnd, []string{"get_weather", "get", "search_web"}) {
				t.Run(k.name, func(t *testing.T) {
					t.Parallel()
					rng := rand.New(rand.NewPCG(17, uint64(i)))
					compareWalk(t, k.g, base.VocabSize(), base.StopTokens(), minBudget(k.g)+rng.IntN(12), rng, text)
				})
			}
		})
	}
}

// openTokenizerBase opens a random-weight snapshot on the model's real tokenizer (a Llama 3 one skips the
// test when its tokenizer files are not fetched, see hfsnapshot).
func openTokenizerBase(t testing.TB, model string) *engine.Base {
	t.Helper()
	dir := t.TempDir()
	switch model {
	case "qwen3":
		hfsnapshot.WriteQwen3Snapshot(t, dir, hfsnapshot.TinyQwen3, 1)
	case "llama3":
		hfsnapshot.WriteLlama3Snapshot(t, dir, hfsnapshot.TinyLlama3, 1)
	}
	base, err := engine.OpenSnapshot("test/"+model, dir)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// reboxed hides a grammar's concrete type from the trie walk at every step, so the walk takes its
// fallback, stepping through the grammar interface.
type reboxed struct{ grammar }

func (r reboxed) next(id int) (grammar, bool) {
	g, ok := r.grammar.next(id)
	return reboxed{g}, ok
}
