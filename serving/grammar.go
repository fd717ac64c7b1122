package serving

import (
	"strings"

	"github.com/trainyard/trainyard/engine"
)

// grammar is a language over token ids, walked one token at a time. Implementations are small values:
// next returns a new grammar and never changes the receiver, so a constraint can try any candidate token,
// and the trie walk of a mask keeps one state per prefix (tokenTrie).
type grammar interface {
	// next returns the grammar after token id, or false when id cannot come next.
	next(id int) (grammar, bool)
	// try reports whether id may come next and the cost after it, without allocating. It decides the
	// tokens read whole (tool-call markers); a mask over the vocabulary is computed at once by
	// masker.allow, which must agree with try on every token (the tests check it against try).
	try(id int) (cost int, ok bool)
	// cost is the fewest tokens that reach a complete sentence from here.
	cost() int
	// done reports whether what was read so far is a complete sentence (the turn may end).
	done() bool
}

// jsonGrammar is a JSON object in byte tokens (response_format json_object). Special tokens never occur
// inside it.
type jsonGrammar struct{ m jsonMachine }

func (g jsonGrammar) next(id int) (grammar, bool) {
	if id < 0 || id > 255 {
		return g, false
	}
	m, ok := g.m.step(byte(id))
	return jsonGrammar{m}, ok
}

func (g jsonGrammar) try(id int) (int, bool) {
	if id < 0 || id > 255 {
		return 0, false
	}
	m, ok := g.m.step(byte(id))
	return m.cost(), ok
}

func (g jsonGrammar) cost() int  { return g.m.cost() }
func (g jsonGrammar) done() bool { return g.m.done() }

// toolCallGrammar forces the output to be tool calls in the template's format. With tool-call tokens
// (Qwen, the built-in models) that is one or more blocks
//
//	<tool_call>{"name":"NAME","arguments":{...}}</tool_call>
//
// and without them (Llama 3, whose template has the model answer a call as the whole turn) exactly one
// object, written as the template writes past calls,
//
//	{"name": "NAME", "parameters": {...}}
//
// after which only the end of turn may come. NAME is one of names (tool_choice "required", or a single
// name for a named tool_choice). Tool names are validated by the API as [A-Za-z0-9_-]+, so they need no
// JSON escaping.
type toolCallGrammar struct {
	callStart, callEnd int // -1 for the bare JSON form
	names              []string
	multi              bool // further calls may follow a complete one (parallel_tool_calls)
	head, mid          string

	phase toolPhase
	lit   string // literal bytes still to write in phaseHead/phaseMid/phaseTail
	name  string // name bytes written so far
	args  jsonMachine
}

type toolPhase uint8

const (
	phaseOpen  toolPhase = iota // <tool_call> expected (or, untagged, the first byte of the head)
	phaseHead                   // writing {"name":"
	phaseName                   // writing the name, ended by '"'
	phaseMid                    // writing ,"arguments":
	phaseArgs                   // the arguments object
	phaseTail                   // writing }
	phaseClose                  // </tool_call> expected
	phaseDone                   // a call is complete
)

// The literals around the name and the arguments: compact in a <tool_call> block (what the built-in
// models were trained on), and as Llama 3's templates render a call.
const (
	toolHead      = `{"name":"`
	toolMid       = `,"arguments":`
	llamaCallHead = `{"name": "`
	llamaCallMid  = `, "parameters": `
)

func newToolCallGrammar(callStart, callEnd int, names []string, multi bool) toolCallGrammar {
	return toolCallGrammar{callStart: callStart, callEnd: callEnd, names: names, multi: multi, head: toolHead, mid: toolMid}
}

// newJSONCallGrammar is the single bare-JSON call of a model without tool-call tokens.
func newJSONCallGrammar(names []string) toolCallGrammar {
	return toolCallGrammar{callStart: -1, callEnd: -1, names: names, head: llamaCallHead, mid: llamaCallMid}
}

func (g toolCallGrammar) tagged() bool { return g.callStart >= 0 }

// tailCost is what follows the arguments object: } and, in a block, </tool_call>.
func (g toolCallGrammar) tailCost() int {
	if g.tagged() {
		return 2
	}
	return 1
}

func (g toolCallGrammar) next(id int) (grammar, bool) {
	return g.step(id)
}

func (g toolCallGrammar) try(id int) (int, bool) {
	n, ok := g.step(id)
	return n.cost(), ok
}

func (g toolCallGrammar) step(id int) (toolCallGrammar, bool) {
	switch {
	case g.phase == phaseOpen && !g.tagged():
		g.phase, g.lit = phaseHead, g.head // the call begins with its first byte
	case g.phase == phaseOpen, g.phase == phaseDone:
		if !g.tagged() || id != g.callStart || (g.phase == phaseDone && !g.multi) {
			return g, false
		}
		g.phase, g.lit, g.name, g.args = phaseHead, g.head, "", jsonMachine{}
		return g, true
	case g.phase == phaseClose:
		if id != g.callEnd {
			return g, false
		}
		g.phase = phaseDone
		return g, true
	}
	if id < 0 || id > 255 {
		return g, false
	}
	b := byte(id)
	switch g.phase {
	case phaseHead, phaseMid, phaseTail:
		if b != g.lit[0] {
			return g, false
		}
		if g.lit = g.lit[1:]; g.lit == "" {
			switch g.phase {
			case phaseHead:
				g.phase = phaseName
			case phaseMid:
				g.phase = phaseArgs
			case phaseTail:
				g.phase = phaseClose
				if !g.tagged() {
					g.phase = phaseDone
				}
			}
		}
		return g, true
	case phaseName:
		if b == '"' {
			if !g.isName(g.name) {
				return g, false
			}
			g.phase, g.lit = phaseMid, g.mid
			return g, true
		}
		if g.shortestWithPrefix(g.name+string(b)) < 0 {
			return g, false
		}
		g.name += string(b)
		return g, true
	}
	m, ok := g.args.step(b) // phaseArgs
	if !ok {
		return g, false
	}
	g.args = m
	if m.done() {
		g.phase, g.lit = phaseTail, "}"
	}
	return g, true
}

func (g toolCallGrammar) cost() int {
	tail := g.tailCost()
	afterName := 1 + len(g.mid) + 2 + tail // '"', the mid literal, {}, then the tail
	open := 0
	if g.tagged() {
		open = 1
	}
	switch g.phase {
	case phaseOpen:
		return open + len(g.head) + g.shortestWithPrefix("") + afterName
	case phaseHead:
		return len(g.lit) + g.shortestWithPrefix("") + afterName
	case phaseName:
		return g.shortestWithPrefix(g.name) - len(g.name) + afterName
	case phaseMid:
		return len(g.lit) + 2 + tail
	case phaseArgs:
		return g.args.cost() + tail
	case phaseTail:
		return len(g.lit) + tail - 1
	case phaseClose:
		return 1
	}
	return 0
}

func (g toolCallGrammar) done() bool { return g.phase == phaseDone }

func (g toolCallGrammar) isName(s string) bool {
	for _, n := range g.names {
		if n == s {
			return true
		}
	}
	return false
}

// shortestWithPrefix returns the length of the shortest allowed name starting with p, or -1.
func (g toolCallGrammar) shortestWithPrefix(p string) int {
	best := -1
	for _, n := range g.names {
		if strings.HasPrefix(n, p) && (best < 0 || len(n) < best) {
			best = len(n)
		}
	}
	return best
}

// tokenGrammar runs a grammar written over byte tokens (ids 0..255 are the bytes, as in the engine's
// byte-level tokenizer) on a tokenizer whose tokens are strings of bytes: a token is allowed when the
// grammar accepts each of its bytes in turn. The tool-call tokens go to the grammar as themselves; other
// added tokens (turn markers, <think>) never occur inside a grammar's sentence. Costs stay counted in
// bytes, an upper bound on the tokens still needed since every byte is a token of a byte-level BPE.
type tokenGrammar struct {
	g grammar
	v *grammarVocab
}

// grammarVocab is what tokenGrammar reads of the tokenizer, shared by every step and, with its trie, by
// every constrained request on one base model (bases builds it once per base, on first use).
type grammarVocab struct {
	bytes func(id int) []byte
	added func(id int) bool
	pass  [2]int // tool-call tokens handed to the grammar as ids
	trie  *tokenTrie
}

// newGrammarVocab reads a vocabulary of size ids. The trie holds the tokens a grammar reads as bytes:
// not the added ones (which never occur inside a sentence) and not the pass-through ones.
func newGrammarVocab(size int, tokenBytes func(id int) []byte, added func(id int) bool, pass [2]int) *grammarVocab {
	v := &grammarVocab{bytes: tokenBytes, added: added, pass: pass}
	v.trie = newTokenTrie(size, tokenBytes, func(id int) bool { return added(id) || id == pass[0] || id == pass[1] })
	return v
}

// vocabOf reads base's tokenizer for grammars. Every tokenizer goes through tokenGrammar, the engine's
// byte-level one too (its ids 0..255 are the bytes and its special tokens are added tokens), so one mask
// computation serves them all. The masks cover the model's vocabulary, which may be padded past the
// tokenizer's (ids with no bytes are never allowed inside a sentence).
func vocabOf(base *engine.Base) *grammarVocab {
	tok := base.Tokenizer()
	pass := [2]int{-1, -1}
	if start, end, ok := base.ToolCallTokens(); ok {
		pass = [2]int{start, end}
	}
	added := tok.IsSpecial
	if a, ok := tok.(interface{ IsAdded(int) bool }); ok {
		added = a.IsAdded
	}
	return newGrammarVocab(min(tok.VocabSize(), base.VocabSize()), tok.TokenBytes, added, pass)
}

// onTokens adapts g, a grammar over byte tokens, to the tokenizer read into v.
func onTokens(g grammar, v *grammarVocab) tokenGrammar { return tokenGrammar{g: g, v: v} }

// byteRunner is a grammar over bytes that can take a whole token's bytes at once. Stepping the concrete
// type and boxing only the result keeps a token's check (try, next) free of an allocation per byte. Masks
// do not check tokens one by one: tokenGrammar.allow walks the vocabulary's trie.
type byteRunner interface {
	tryBytes(bs []byte) (cost int, ok bool)
	nextBytes(bs []byte) (grammar, bool)
}

func (g toolCallGrammar) run(bs []byte) (toolCallGrammar, bool) {
	if g.phase == phaseArgs {
		// Most tokens of a call are in its arguments: step the JSON machine alone until it closes.
		m := g.args
		for i, b := range bs {
			var ok bool
			if m, ok = m.step(b); !ok {
				return g, false
			}
			if m.done() {
				g.args, g.phase, g.lit = m, phaseTail, "}"
				bs = bs[i+1:]
				break
			}
		}
		if g.phase == phaseArgs {
			g.args = m
			return g, true
		}
	}
	for _, b := range bs {
		var ok bool
		if g, ok = g.step(int(b)); !ok {
			return g, false
		}
	}
	return g, true
}

func (g toolCallGrammar) tryBytes(bs []byte) (int, bool) {
	n, ok := g.run(bs)
	return n.cost(), ok
}

func (g toolCallGrammar) nextBytes(bs []byte) (grammar, bool) {
	n, ok := g.run(bs)
	return n, ok
}

func (g jsonGrammar) run(bs []byte) (jsonMachine, bool) {
	m := g.m
	for _, b := range bs {
		var ok bool
		if m, ok = m.step(b); !ok {
			return m, false
		}
	}
	return m, true
}

func (g jsonGrammar) tryBytes(bs []byte) (int, bool) {
	m, ok := g.run(bs)
	return m.cost(), ok
}

func (g jsonGrammar) nextBytes(bs []byte) (grammar, bool) {
	m, ok := g.run(bs)
	return jsonGrammar{m}, ok
}

func (t tokenGrammar) step(id int) (grammar, bool) {
	if id == t.v.pass[0] || id == t.v.pass[1] {
		return t.g.next(id)
	}
	bs := t.v.bytes(id)
	if len(bs) == 0 || t.v.added(id) {
		return nil, false
	}
	if r, ok := t.g.(byteRunner); ok {
		return r.nextBytes(bs)
	}
	g := t.g
	for _, b := range bs {
		var ok bool
		if g, ok = g.next(int(b)); !ok {
			return nil, false
		}
	}
	return g, true
}

func (t tokenGrammar) next(id int) (grammar, bool) {
	g, ok := t.step(id)
	if !ok {
		return t, false
	}
	return tokenGrammar{g: g, v: t.v}, true
}

func (t tokenGrammar) try(id int) (int, bool) {
	if id == t.v.pass[0] || id == t.v.pass[1] {
		return t.g.try(id)
	}
	bs := t.v.bytes(id)
	if len(bs) == 1 && !t.v.added(id) {
		return t.g.try(int(bs[0]))
	}
	if r, ok := t.g.(byteRunner); ok && len(bs) > 0 && !t.v.added(id) {
		return r.tryBytes(bs)
	}
	g, ok := t.step(id)
	if !ok {
		return 0, false
	}
	return g.cost(), true
}

func (t tokenGrammar) cost() int  { return t.g.cost() }
func (t tokenGrammar) done() bool { return t.g.done() }

// masker is a grammar that computes at once which tokens may come next, as a constraint needs before
// every sampled token.
type masker interface {
	grammar
	// allow sets mask[id] for every id to whether try(id) accepts it with a cost of at most limit. (The
	// constraint then sets the end-of-turn tokens itself.)
	allow(mask []bool, limit int)
}

// allow walks the vocabulary's trie from the grammar's state, then asks about the tool-call tokens, the
// only ones read whole. Added tokens are not in the trie, so they stay refused, as in try.
func (t tokenGrammar) allow(mask []bool, limit int) {
	clear(mask)
	t.v.trie.allowTokens(t.g, limit, mask)
	for _, id := range t.v.pass {
		if id >= 0 && id < len(mask) {
			cost, ok := t.g.try(id)
			mask[id] = ok && cost <= limit
		}
	}
}

// afterReasoning puts a think block before a grammar's sentence, as vLLM applies structured output only
// once the reasoning has ended. A completion that starts inside the block (the prompt opened it) reasons
// freely — any token but the end of turn, which the constraint allows only once the grammar is done —
// until </think>, then follows g; one that may open a block (optional) either starts with <think> or is
// g's sentence directly. Costs count the </think> still to come, so the token budget always leaves room
// for the closing marker and g's shortest sentence.
type afterReasoning struct {
	start, end int // <think>, </think>
	g          masker
	phase      reasoningPhase
}

type reasoningPhase uint8

const (
	reasonOptional reasoningPhase = iota // the first token may open a block
	reasonInside                         // in the block, until </think>
	reasonClosed                         // the block is over (or never opened): g applies
)

func (a afterReasoning) next(id int) (grammar, bool) {
	switch {
	case a.phase == reasonOptional && id == a.start:
		a.phase = reasonInside
		return a, true
	case a.phase == reasonInside:
		if id == a.end {
			a.phase = reasonClosed
		}
		return a, true
	}
	g, ok := a.g.next(id)
	if !ok {
		return a, false
	}
	a.g, a.phase = g.(masker), reasonClosed // a masker's next is of its own type
	return a, true
}

func (a afterReasoning) try(id int) (int, bool) {
	switch {
	case a.phase == reasonOptional && id == a.start:
		return 1 + a.g.cost(), true
	case a.phase == reasonInside && id == a.end:
		return a.g.cost(), true
	case a.phase == reasonInside:
		return a.cost(), true
	}
	return a.g.try(id)
}

func (a afterReasoning) cost() int {
	if a.phase == reasonInside {
		return 1 + a.g.cost()
	}
	return a.g.cost()
}

func (a afterReasoning) done() bool { return a.phase != reasonInside && a.g.done() }

// allow follows try: inside the block every token is allowed at the block's cost and </think> at the
// sentence's; otherwise the mask is g's, plus <think> first when a block may open.
func (a afterReasoning) allow(mask []bool, limit int) {
	if a.phase == reasonInside {
		ok := a.cost() <= limit
		for id := range mask {
			mask[id] = ok
		}
		if a.end >= 0 && a.end < len(mask) {
			mask[a.end] = a.g.cost() <= limit
		}
		return
	}
	a.g.allow(mask, limit)
	if a.phase == reasonOptional && a.start >= 0 && a.start < len(mask) {
		mask[a.start] = 1+a.g.cost() <= limit
	}
}
