package hf

import "sync"

// bpe is the BPE model: it turns one pre-tokenized piece into token ids. A byte-level model (GPT-2's
// alphabet: Qwen, Llama 3) keeps pieces as raw bytes throughout, so its vocabulary is indexed by the bytes
// each token stands for (raw) and the GPT-2 spelling of the file is decoded once, at load. A
// SentencePiece-style model (chars: Gemma, Llama 2) starts from the characters of the piece ("▁" for
// spaces), with byte-fallback tokens or the unknown token for characters the vocabulary lacks. Either way
// the merge table is indexed by pairs of ids.
type bpe struct {
	raw          map[string]int32 // byte-level: raw bytes → id, for tokens the model can produce
	tokens       [][]byte         // id → decoded bytes, nil where no id
	byteID       [256]int32       // byte-level: the single-byte tokens, the starting symbols of every piece
	merges       mergeTable       // (left id, right id) → rank and result
	ignoreMerges bool             // a piece that is a whole vocabulary token is that token (Llama 3)
	cache        wordCache
	scratch      sync.Pool // *mergeState

	// SentencePiece-style models.
	chars        bool
	vocab        map[string]int // token text → id, for ignore_merges
	asciiID      [128]int32     // the token of each ASCII character, -1 for none
	charID       map[rune]int32 // the token of every other character that has one
	byteFallback bool           // characters without a token become their bytes' "<0xNN>" tokens
	byteTok      [256]int32
	unk          int32 // the unknown token, -1 for none
	fuseUnk      bool  // a run of unknown characters is one unknown token
	cutWords     bool  // pieces are cut into words before "▁" (appendWords)
	crossesMeta  map[rune]bool
	fallbackLast rune // the last character of the byte-fallback or unknown token's text
}

// appendPiece appends the ids of one piece to dst.
func (m *bpe) appendPiece(dst []int, piece string) []int {
	if m.chars {
		return m.appendWords(dst, piece)
	}
	return m.appendWord(dst, piece)
}

// appendWord appends the ids of one piece that is merged as a whole.
func (m *bpe) appendWord(dst []int, piece string) []int {
	if piece == "" {
		return dst
	}
	if m.ignoreMerges {
		var id int32
		var ok bool
		if m.chars {
			var v int
			v, ok = m.vocab[piece]
			id = int32(v)
		} else {
			id, ok = m.raw[piece]
		}
		if ok {
			return append(dst, int(id))
		}
	}
	if len(piece) == 1 && !m.chars {
		return append(dst, int(m.byteID[piece[0]]))
	}
	if ids, ok := m.cache.get(piece); ok {
		for _, id := range ids {
			dst = append(dst, int(id))
		}
		return dst
	}
	st, _ := m.scratch.Get().(*mergeState)
	if st == nil {
		st = &mergeState{}
	}
	if m.chars {
		st.ids = m.charSymbols(piece, st.ids[:0])
	} else {
		st.ids = st.ids[:0]
		for i := 0; i < len(piece); i++ {
			st.ids = append(st.ids, m.byteID[piece[i]])
		}
	}
	ids := st.merge(m, st.ids)
	m.cache.put(piece, ids)
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	m.scratch.Put(st)
	return dst
}

// mergeTo is one merge rule: its rank (position in the file, lower merges first) and the merged token's id.
type mergeTo struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// symbol is one current token of a piece being merged, linked to its neighbours by index; a merged-away
// symbol has gone set.
type symbol struct {
	id         int32
	prev, next int32
	gone       bool
}

// candidate is a possible merge of the symbol at pos (id left) with its right neighbour (id right). key
// orders candidates: rank in the high half, position in the low half.
type candidate struct {
	key             uint64
	id, left, right int32
}

func newCandidate(mt mergeTo, pos, left, right int32) candidate {
	return candidate{uint64(mt.rank)<<32 | uint64(uint32(pos)), mt.id, left, right}
}

func (c candidate) pos() int32 { return int32(uint32(c.key)) }

// mergeQueue is a binary min-heap of candidates by rank, then position: the lowest-ranked pair merges first
// and, among equal pairs, the leftmost, which is the order of the Hugging Face implementation. Hand-written
// rather than container/heap so that pushing and popping do not box every candidate.
type mergeQueue []candidate

func (q mergeQueue) less(i, j int) bool { return q[i].key < q[j].key }

func (q *mergeQueue) push(c candidate) {
	*q = append(*q, c)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *mergeQueue) pop() candidate {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(h) && h.less(l, small) {
			small = l
		}
		if r := l + 1; r < len(h) && h.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	*q = h
	return top
}

// mergeState is the reusable working memory of one merge.
type mergeState struct {
	ids   []int32
	syms  []symbol
	queue mergeQueue
}

// shortPiece is the length up to which merging rescans the pairs instead of keeping a queue: words are short,
// and for them a linear scan is cheaper than heap upkeep.
const shortPiece = 12

// merge applies the merge rules to the starting symbols ids and returns a fresh slice of ids.
func (st *mergeState) merge(m *bpe, ids []int32) []int32 {
	if len(ids) <= shortPiece {
		return mergeShort(m, ids)
	}
	st.syms = st.syms[:0]
	for i, id := range ids {
		st.syms = append(st.syms, symbol{id: id, prev: int32(i - 1), next: int32(i + 1)})
	}
	syms := st.syms
	syms[len(syms)-1].next = -1
	st.queue = st.queue[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mt, ok := m.merges.get(pairKey(syms[i].id, syms[i+1].id)); ok {
			st.queue.push(newCandidate(mt, int32(i), syms[i].id, syms[i+1].id))
		}
	}
	q := &st.queue
	for len(*q) > 0 {
		c := q.pop()
		pos := c.pos()
		left := &syms[pos]
		if left.gone || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		// A stale candidate: one of the two symbols has merged with another neighbour since it was queued.
		// (The reference compares the merge result instead; a symbol only grows, so the two tests agree.)
		if left.id != c.left || right.id != c.right {
			continue
		}
		left.id = c.id
		right.gone = true
		left.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = pos
		}
		if left.prev >= 0 {
			if mt, ok := m.merges.get(pairKey(syms[left.prev].id, left.id)); ok {
				q.push(newCandidate(mt, left.prev, syms[left.prev].id, left.id))
			}
		}
		if left.next >= 0 {
			if mt, ok := m.merges.get(pairKey(left.id, syms[left.next].id)); ok {
				q.push(newCandidate(mt, pos, left.id, syms[left.next].id))
			}
		}
	}
	n := 0
	for i := range syms {
		if !syms[i].gone {
			n++
		}
	}
	out := make([]int32, 0, n)
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}

// mergeShort merges a short run of symbols by scanning: each round merges the lowest-ranked adjacent pair,
// the leftmost among equals, which is the order the queue gives. It works in ids' memory.
func mergeShort(m *bpe, ids []int32) []int32 {
	for len(ids) > 1 {
		best, at := mergeTo{rank: -1}, -1
		for i := 0; i+1 < len(ids); i++ {
			if mt, ok := m.merges.get(pairKey(ids[i], ids[i+1])); ok && (at < 0 || mt.rank < best.rank) {
				best, at = mt, i
			}
		}
		if at < 0 {
			break
		}
		ids[at] = best.id
		ids = append(ids[:at+1], ids[at+2:]...)
	}
	return append([]int32(nil), ids...)
}
