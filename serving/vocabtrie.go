package serving

import (
	"bytes"
	"slices"
)

// tokenTrie is a byte trie of a vocabulary's ordinary tokens (not added tokens, not empty ones), so a
// constraint computes the allowed tokens by walking it from the grammar's state instead of stepping the
// grammar through every token of a 150k vocabulary: a subtree is skipped as soon as the grammar refuses
// the byte that leads into it, so each step of the grammar serves every token sharing that prefix.
//
// The nodes are stored flat in preorder, which is the byte-wise sort order of the tokens: a node's
// subtree is the run of nodes up to its end, its first child (if any) is the next node, and a child's
// next sibling is that child's end. The tokens are sorted the same way, so the tokens that end at node i
// are ids[nodes[i].tok:nodes[i+1].tok]. A final sentinel node closes the last run. About 12 bytes a node,
// a few MB for Qwen3's or Llama 3's vocabulary, built once per base model (bases caches it).
type tokenTrie struct {
	nodes []trieNode
	ids   []int32
}

type trieNode struct {
	b       byte  // the byte leading into this node from its parent
	content bool  // entered from a string's content, every token below is string content (markStringContent)
	end     int32 // index past the last node of this subtree
	tok     int32 // index in ids of the first token ending at (or, past it, below) this node
}

// newTokenTrie builds the trie of ids 0..size-1 whose bytes are not empty, skipping those for which skip
// is true.
func newTokenTrie(size int, tokenBytes func(id int) []byte, skip func(id int) bool) *tokenTrie {
	ids := make([]int32, 0, size)
	for id := 0; id < size; id++ {
		if len(tokenBytes(id)) > 0 && !skip(id) {
			ids = append(ids, int32(id))
		}
	}
	// A stable sort keeps duplicates (two ids with the same bytes) in id order; both end at one node.
	slices.SortStableFunc(ids, func(a, b int32) int { return bytes.Compare(tokenBytes(int(a)), tokenBytes(int(b))) })

	t := &tokenTrie{nodes: []trieNode{{}}, ids: ids}
	path := []int32{0} // the nodes of the previous token's bytes, the root first
	var prev []byte
	for i, id := range ids {
		bs := tokenBytes(int(id))
		common := 0
		for common < len(prev) && common < len(bs) && prev[common] == bs[common] {
			common++
		}
		// Close the nodes of the previous token below the shared prefix: their subtrees are complete.
		for len(path) > common+1 {
			t.nodes[path[len(path)-1]].end = int32(len(t.nodes))
			path = path[:len(path)-1]
		}
		for _, b := range bs[common:] {
			path = append(path, int32(len(t.nodes)))
			t.nodes = append(t.nodes, trieNode{b: b, tok: int32(i)})
		}
		prev = bs
	}
	for _, n := range path {
		t.nodes[n].end = int32(len(t.nodes))
	}
	t.nodes = append(t.nodes, trieNode{tok: int32(len(ids))}) // sentinel
	t.markStringContent()
	return t
}

// markStringContent sets each node's content flag: whether, for a JSON string at its content state (no
// UTF-8 sequence, escape or \u sequence under way) at the node's parent, every path below the node is
// accepted without leaving the string and every token below ends back at the content state. Such a state
// reads those bytes whatever else it holds (the containers, whether the string is a key only matter once a
// quote ends it, which no such path has), so the walk takes the whole subtree in one go with the state's
// own cost (see byteState.atStringContent). Inside a string is where a constrained completion spends most
// of its tokens (the values of a call's arguments) and where the grammar refuses the fewest tokens.
//
// The automaton is jsonMachine itself, run from a string's content over every byte to enumerate the states
// a string passes through without ending (inside a UTF-8 sequence with its bounds, after a backslash,
// inside \uXXXX: 13 of them), so the flags cannot drift from what step does. The flags are then computed
// bottom-up for every entry state at once, one bit per state, in a backward pass over the preorder.
func (t *tokenTrie) markStringContent() {
	canon := func(m jsonMachine) jsonMachine {
		if m.utf8Left == 0 {
			m.lo, m.hi = 0, 0 // the bounds of a finished sequence are not read again
		}
		return m
	}
	inside := func(m jsonMachine) bool { return m.state == jString || m.state == jEscape || m.state == jUnicode }
	states := []jsonMachine{{state: jString}} // states[0] is the content state
	index := map[jsonMachine]int{states[0]: 0}
	var delta [][256]int8 // the next state's index, -1 once the string ends or the byte is refused
	for q := 0; q < len(states); q++ {
		var row [256]int8
		for b := range 256 {
			n, ok := states[q].step(byte(b))
			if !ok || !inside(n) {
				row[b] = -1
				continue
			}
			n = canon(n)
			j, seen := index[n]
			if !seen {
				j = len(states)
				index[n] = j
				states = append(states, n)
			}
			row[b] = int8(j)
		}
		delta = append(delta, row)
	}
	if len(states) > 32 {
		panic("serving: a JSON string has more states than markStringContent's bit sets hold")
	}
	closed := make([]uint32, len(t.nodes)) // bit q: entered from state q, the subtree is string content
	all := uint32(1)<<len(states) - 1
	for i := len(t.nodes) - 2; i > 0; i-- {
		below := all
		for c := int32(i) + 1; c < t.nodes[i].end; c = t.nodes[c].end {
			below &= closed[c]
		}
		endsHere := t.nodes[i].tok < t.nodes[i+1].tok
		for q := range delta {
			d := delta[q][t.nodes[i].b]
			if d >= 0 && (!endsHere || d == 0) && below&(1<<d) != 0 {
				closed[i] |= 1 << q
			}
		}
		t.nodes[i].content = closed[i]&1 != 0
	}
}

// byteState is a grammar state stepped one byte at a time by value: step returns the state after b and
// leaves the receiver as it was. The walk relies on that — it keeps each prefix's state in its own stack
// frame, so backing out of a subtree is returning from the call, with nothing to undo. The grammars'
// states are small values already (jsonMachine's container stack is an immutable string, toolCallGrammar
// holds the jsonMachine and strings), so persistent values cost a copy of at most a couple hundred bytes
// a node and need no snapshot/restore bookkeeping.
type byteState[S any] interface {
	stepByte(b byte) (S, bool)
	cost() int
	// atStringContent reports whether the state is a JSON string's content state, where a node's content
	// flag holds (markStringContent): every token below such a node is accepted and leaves the state's
	// cost as it is.
	atStringContent() bool
}

// walkTrie sets mask[id] for every token below node that s accepts leaving a cost of at most limit.
// Generic over the state's concrete type so that a step does not box the state (an allocation per node).
func walkTrie[S byteState[S]](t *tokenTrie, node int32, s S, limit int, mask []bool) {
	content := s.atStringContent()
	for c := node + 1; c < t.nodes[node].end; c = t.nodes[c].end {
		if content && t.nodes[c].content {
			// Every token below c reads as s itself: all allowed or none, by s's cost.
			if s.cost() <= limit {
				for _, id := range t.ids[t.nodes[c].tok:t.nodes[t.nodes[c].end].tok] {
					if int(id) < len(mask) {
						mask[id] = true
					}
				}
			}
			continue
		}
		n, ok := s.stepByte(t.nodes[c].b)
		if !ok {
			continue // no token with this prefix can come next
		}
		if lo, hi := t.nodes[c].tok, t.nodes[c+1].tok; lo < hi && n.cost() <= limit {
			for _, id := range t.ids[lo:hi] {
				if int(id) < len(mask) {
					mask[id] = true
				}
			}
		}
		walkTrie(t, c, n, limit, mask)
	}
}

// boxedState steps a grammar that has no by-value byte state through its interface, allocating on each
// step: correct for any grammar over byte tokens, fast for none.
type boxedState struct{ g grammar }

func (s boxedState) stepByte(b byte) (boxedState, bool) {
	g, ok := s.g.next(int(b))
	return boxedState{g}, ok
}

func (s boxedState) cost() int { return s.g.cost() }

func (boxedState) atStringContent() bool { return false }

func (m jsonMachine) stepByte(b byte) (jsonMachine, bool) { return m.step(b) }

func (g toolCallGrammar) stepByte(b byte) (toolCallGrammar, bool) { return g.step(int(b)) }

// atStringContent: inside a string, between characters (ws is always 0 there: the opening quote reset
// it). A token of string content leaves the machine here again with the same cost: cost reads utf8Left
// and hexLeft, both back at 0, and nothing else a string changes.
func (m jsonMachine) atStringContent() bool {
	return m.state == jString && m.utf8Left == 0 && m.ws == 0
}

// atStringContent: the call's arguments are a jsonMachine until they close, which a string never does.
func (g toolCallGrammar) atStringContent() bool {
	return g.phase == phaseArgs && g.args.atStringContent()
}

// allowTokens sets mask[id] for the ordinary tokens g accepts within limit, walking the trie from g's
// state with its concrete type.
func (t *tokenTrie) allowTokens(g grammar, limit int, mask []bool) {
	switch g := g.(type) {
	case jsonGrammar:
		walkTrie(t, 0, g.m, limit, mask)
	case toolCallGrammar:
		walkTrie(t, 0, g, limit, mask)
	default:
		walkTrie(t, 0, boxedState{g}, limit, mask)
	}
}
