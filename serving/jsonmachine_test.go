package serving

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

func feedJSON(s string) (jsonMachine, int) {
	var m jsonMachine
	for i := 0; i < len(s); i++ {
		next, ok := m.step(s[i])
		if !ok {
			return m, i
		}
		m = next
	}
	return m, -1
}

func TestJSONMachineAcceptsObjects(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{}`,
		`{"a":1}`,
		`{ "a" : [1, -2.5e+3, 0, 0.25, 1E9, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"] }`,
		"{\"ключ\":\"значение 🚀\",\"b\":{\"c\":[[],{}]}}",
		"{\n  \"a\": {\n    \"b\": -0\n  }\n}",
	}
	for _, d := range docs {
		m, at := feedJSON(d)
		if at >= 0 {
			t.Errorf("%q rejected at byte %d", d, at)
			continue
		}
		if !m.done() || m.cost() != 0 {
			t.Errorf("%q: done=%v cost=%d, want done with cost 0", d, m.done(), m.cost())
		}
	}
}

func TestJSONMachineRejects(t *testing.T) {
	t.Parallel()
	bad := map[string]int{ // document -> index of the first byte that must be refused
		`[1]`:                      0, // the root must be an object
		` {}`:                      0,
		`{"a" 1}`:                  5,
		`{"a":01}`:                 6,
		`{"a":1,}`:                 7,
		`{"a":tru}`:                8,
		`{"a":"\x"}`:               7,
		`{"a":1234567890123456}`:   20, // more integer digits than a float64 keeps
		`{"a":1e123}`:              9,  // an exponent past two digits
		"{\"a\":\"\x01\"}":         6,
		"{\"a\":\"\xc0\x80\"}":     6, // overlong UTF-8
		"{\"a\":\"\xed\xa0\x80\"}": 7, // a UTF-16 surrogate in UTF-8
		`{"a":1}}`:                 7,
		`{"a":1} `:                 7,
		`{"a":-}`:                  6,
		`{"a":1.}`:                 7,
		`{"a":[1}`:                 7,
	}
	for d, want := range bad {
		if _, at := feedJSON(d); at != want {
			t.Errorf("%q: refused at %d, want %d", d, at, want)
		}
	}
}

func TestJSONMachineIncompleteIsNotDone(t *testing.T) {
	t.Parallel()
	for _, d := range []string{`{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":"x`, `{"a":[`, `{"a":tr`, `{"a":1e`} {
		m, at := feedJSON(d)
		if at >= 0 || m.done() || m.cost() == 0 {
			t.Errorf("%q: refused at %d, done=%v cost=%d; want accepted, not done, cost > 0", d, at, m.done(), m.cost())
		}
	}
}

// randomWalk samples uniformly among the tokens a constraint allows until a stop token is chosen, and
// fails the test if the constraint ever leaves nothing to choose.
// randomWalk samples a completion of g under a constraint with the given budget, each token drawn
// uniformly from those the constraint allows, and checks every mask against the brute-force reference. A
// grammar over byte tokens is run on the byte vocabulary of these tests (ids 0..255 the bytes).
func randomWalk(t *testing.T, g grammar, budget int, rng *rand.Rand) []int {
	t.Helper()
	const stop = 256
	m, ok := g.(masker)
	if !ok {
		m = byteTokens(g)
	}
	c := newConstraint(m, budget, []int{stop})
	mask, want := make([]bool, 264), make([]bool, 264)
	var out []int
	for {
		c.Allow(mask)
		bruteForceAllow(c.g, c.left, c.stops, want)
		if id := firstDifference(mask, want); id >= 0 {
			t.Fatalf("after %q: token %d allowed %v, brute force says %v", bytesOf(out), id, mask[id], want[id])
		}
		var allowed []int
		for id, ok := range mask {
			if ok {
				allowed = append(allowed, id)
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("no token allowed after %q (budget %d)", bytesOf(out), budget)
		}
		id := allowed[rng.IntN(len(allowed))]
		if id == stop {
			if len(out)+1 > budget {
				t.Fatalf("%d tokens plus the stop exceed the budget %d", len(out), budget)
			}
			return out
		}
		out = append(out, id)
		c.Advance(id)
	}
}

func bytesOf(ids []int) string {
	b := make([]byte, 0, len(ids))
	for _, id := range ids {
		if id < 256 {
			b = append(b, byte(id))
		} else {
			b = append(b, '#')
		}
	}
	return string(b)
}

func TestJSONConstraintAlwaysCompletesWithinBudget(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		budget := 3 + rng.IntN(60)
		out := randomWalk(t, jsonGrammar{}, budget, rng)
		var v map[string]any
		if err := json.Unmarshal([]byte(bytesOf(out)), &v); err != nil {
			t.Fatalf("walk %d produced invalid JSON %q: %v", i, bytesOf(out), err)
		}
	}
}

func TestJSONConstraintMinimalBudget(t *testing.T) {
	t.Parallel()
	if got := minBudget(jsonGrammar{}); got != 3 {
		t.Fatalf("minBudget = %d, want 3 ({, }, end of turn)", got)
	}
	out := randomWalk(t, jsonGrammar{}, 3, rand.New(rand.NewPCG(3, 4)))
	if bytesOf(out) != "{}" {
		t.Fatalf("budget 3 produced %q, want {}", bytesOf(out))
	}
}
