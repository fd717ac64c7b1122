package serving

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/chat"
)

// Token ids of the tool-call delimiters in these tests; the real ones come from the engine's tokenizer.
const testCallStart, testCallEnd = 259, 260

// splitCalls checks the shape <tool_call>{json}</tool_call>... and returns the JSON bodies.
func splitCalls(t *testing.T, ids []int) []string {
	t.Helper()
	var calls []string
	for len(ids) > 0 {
		if ids[0] != testCallStart {
			t.Fatalf("call does not open with <tool_call>: %q", bytesOf(ids))
		}
		end := -1
		for i, id := range ids {
			if id == testCallEnd {
				end = i
				break
			}
		}
		if end < 0 {
			t.Fatalf("unterminated call: %q", bytesOf(ids))
		}
		calls = append(calls, bytesOf(ids[1:end]))
		ids = ids[end+1:]
	}
	return calls
}

func TestToolCallConstraintProducesWellFormedCalls(t *testing.T) {
	t.Parallel()
	names := []string{"get_weather", "get", "search_web"}
	rng := rand.New(rand.NewPCG(5, 6))
	g := newToolCallGrammar(testCallStart, testCallEnd, names, true)
	need := minBudget(g)
	if want := 1 + len(`{"name":"get","arguments":{}}`) + 1 + 1; need != want {
		t.Fatalf("minBudget = %d, want %d", need, want)
	}
	seen := map[string]bool{}
	for i := 0; i < 300; i++ {
		out := randomWalk(t, g, need+rng.IntN(80), rng)
		calls := splitCalls(t, out)
		if len(calls) == 0 {
			t.Fatal("no call produced")
		}
		for _, c := range calls {
			var call struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			}
			dec := json.NewDecoder(strings.NewReader(c))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&call); err != nil || call.Arguments == nil {
				t.Fatalf("call %q does not parse: %v", c, err)
			}
			if call.Name != "get_weather" && call.Name != "get" && call.Name != "search_web" {
				t.Fatalf("call names %q, not an offered tool", call.Name)
			}
			seen[call.Name] = true
		}
	}
	if len(seen) != len(names) {
		t.Errorf("names used: %v, want all of %v", seen, names)
	}
}

func TestNamedToolCallConstraintForcesTheName(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	g := newToolCallGrammar(testCallStart, testCallEnd, []string{"lookup"}, false)
	for i := 0; i < 100; i++ {
		calls := splitCalls(t, randomWalk(t, g, minBudget(g)+rng.IntN(40), rng))
		if len(calls) != 1 || !strings.HasPrefix(calls[0], `{"name":"lookup","arguments":{`) {
			t.Fatalf("calls = %q, want exactly one call of lookup", calls)
		}
	}
}

// TestTokenGrammarMultiByteTokens: grammars written over bytes run on a BPE vocabulary, one token being
// several bytes: a token is allowed when all its bytes are, added tokens other than the tool-call markers
// never are, and the tool-call markers pass through as themselves.
func TestTokenGrammarMultiByteTokens(t *testing.T) {
	vocab := map[int]string{10: "{", 11: `"a":`, 12: "1}", 13: "}", 14: " x", 15: `{"name":"`, 16: `f","arguments":{}}`,
		20: "<|im_end|>", 1000: "<tool_call>", 1001: "</tool_call>"}
	tokenBytes := func(id int) []byte { return []byte(vocab[id]) }
	added := func(id int) bool { return id == 20 || id >= 1000 }
	v := newGrammarVocab(1002, tokenBytes, added, [2]int{-1, -1})
	var g grammar = tokenGrammar{g: jsonGrammar{}, v: v}
	if _, ok := g.try(14); ok {
		t.Fatal(`" x" accepted at the start of a JSON object`)
	}
	if _, ok := g.try(20); ok {
		t.Fatal("an added token accepted inside JSON")
	}
	for _, id := range []int{10, 11, 12} {
		cost, ok := g.try(id)
		if !ok {
			t.Fatalf("token %q refused", vocab[id])
		}
		var next grammar
		if next, ok = g.next(id); !ok || next.cost() != cost {
			t.Fatalf("next(%q) = %v, cost %d vs try's %d", vocab[id], ok, next.cost(), cost)
		}
		g = next
	}
	if !g.done() {
		t.Fatal(`{"a":1} is not a complete object`)
	}

	v = newGrammarVocab(1002, tokenBytes, added, [2]int{1000, 1001})
	g = tokenGrammar{g: newToolCallGrammar(1000, 1001, []string{"f"}, false), v: v}
	for _, id := range []int{1000, 15, 16, 1001} {
		var ok bool
		if g, ok = g.next(id); !ok {
			t.Fatalf("tool call token %q refused", vocab[id])
		}
	}
	if !g.done() {
		t.Fatal("the tool call is not complete")
	}
}

// TestJSONCallConstraintProducesOneCall: without tool-call tokens (Llama 3), a forced call is exactly one
// {"name": …, "parameters": {…}} object naming an offered tool, in the minimum budget and in more, then the
// end of turn; the engine's Llama 3 parser reads it as one call.
func TestJSONCallConstraintProducesOneCall(t *testing.T) {
	t.Parallel()
	names := []string{"get_weather", "get", "search_web"}
	rng := rand.New(rand.NewPCG(9, 10))
	g := newJSONCallGrammar(names)
	need := minBudget(g)
	if want := len(`{"name": "get", "parameters": {}}`) + 1; need != want {
		t.Fatalf("minBudget = %d, want %d", need, want)
	}
	seen := map[string]bool{}
	for i := 0; i < 300; i++ {
		out := bytesOf(randomWalk(t, g, need+rng.IntN(80), rng))
		var call struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&call); err != nil || call.Parameters == nil || dec.More() {
			t.Fatalf("%q is not one call object: %v", out, err)
		}
		if !strings.HasPrefix(out, `{"name": "`+call.Name+`", "parameters": {`) {
			t.Fatalf("%q is not in the template's format", out)
		}
		content, calls := chat.ParseJSONToolCall(out)
		if content != "" || len(calls) != 1 || calls[0].Name != call.Name {
			t.Fatalf("ParseJSONToolCall(%q) = %q, %+v", out, content, calls)
		}
		seen[call.Name] = true
	}
	if len(seen) != len(names) {
		t.Errorf("names used: %v, want all of %v", seen, names)
	}
	// Once the object is closed nothing but the end of turn may follow, not even a second call.
	done := grammar(g)
	for _, b := range []byte(`{"name": "get", "parameters": {}}`) {
		var ok bool
		if done, ok = done.next(int(b)); !ok {
			t.Fatalf("byte %q refused", b)
		}
	}
	if !done.done() || done.cost() != 0 {
		t.Fatal("the call is not complete")
	}
	for id := 0; id < 264; id++ {
		if _, ok := done.try(id); ok {
			t.Fatalf("token %d allowed after the call", id)
		}
	}
}

// TestAfterReasoningConstraint: a completion that starts inside a think block reasons freely, and the
// budget forces </think> and the grammar's sentence in time; the end of turn is allowed only after both.
func TestAfterReasoningConstraint(t *testing.T) {
	t.Parallel()
	const thinkStart, thinkEnd = 261, 262
	g := afterReasoning{start: thinkStart, end: thinkEnd, g: byteTokens(jsonGrammar{}), phase: reasonInside}
	if need := minBudget(g); need != 1+2+1 {
		t.Fatalf("minBudget = %d, want </think>, {}, end of turn", need)
	}
	// Optional: a block may open first, or the sentence starts at once; the minimum is the sentence's.
	opt := afterReasoning{start: thinkStart, end: thinkEnd, g: byteTokens(jsonGrammar{})}
	if need := minBudget(opt); need != 2+1 {
		t.Fatalf("optional block: minBudget = %d, want {}, end of turn", need)
	}
	if cost, ok := opt.try(thinkStart); !ok || cost != 1+2 {
		t.Fatalf("<think> first: %d %v", cost, ok)
	}
	if _, ok := opt.try(thinkEnd); ok {
		t.Fatal("</think> allowed outside a block")
	}
	after, _ := opt.next('{')
	if _, ok := after.try(thinkStart); ok {
		t.Fatal("<think> allowed after the sentence began")
	}
	sawBlock := 0
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 200; i++ {
		walk := grammar(g)
		if i%2 == 1 {
			walk = opt
		}
		out := randomWalk(t, walk, minBudget(g)+rng.IntN(40), rng)
		if i%2 == 1 {
			if len(out) == 0 || out[0] != thinkStart {
				if err := json.Unmarshal([]byte(bytesOf(out)), new(map[string]any)); err != nil {
					t.Fatalf("%q without a block is not a JSON object", bytesOf(out))
				}
				continue
			}
			sawBlock++
		}
		end := -1
		for j, id := range out {
			if id == thinkEnd {
				end = j
				break
			}
		}
		if end < 0 {
			t.Fatalf("no </think> in %q", bytesOf(out))
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(bytesOf(out[end+1:])), &v); err != nil {
			t.Fatalf("after the reasoning %q is not a JSON object: %v", bytesOf(out[end+1:]), err)
		}
	}
	if sawBlock == 0 {
		t.Error("no walk of the optional grammar opened a block")
	}
}
