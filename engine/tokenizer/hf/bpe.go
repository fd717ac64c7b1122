package hf

import "sync"

// bpe is the byte-level BPE model: it turns one pre-tokenized piece (raw bytes) into token ids. Pieces are
// kept as raw bytes throughout, so the vocabulary is indexed by the bytes each token stands for (raw) and the
// merge table by pairs of ids; the GPT-2 spelling of the file is decoded once, at load.
type bpe struct {
	raw          map[string]int32   // raw bytes → id, for tokens the model can produce
	tokens       [][]byte           // id → raw bytes (the file's spelling decoded), nil where no id
	byteID       [256]int32         // the single-byte tokens, the starting symbols of every piece
	merges       map[uint64]mergeTo // (left id, right id) → rank and result
	ignoreMerges bool               // a piece that is a whole vocabulary token is that token (Llama 3)
	cache        wordCache
	scratch      sync.Pool // *mergeState
}

// mergeTo is one merge rule: its rank (position in the file, lower merges first) and the merged token's id.
type mergeTo struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// appendPiece appends the ids of one piece to dst.
func (m *bpe) appendPiece(dst []int, piece string) []int {
	if m.ignoreMerges {
		if id, ok := m.raw[piece]; ok {
			return append(dst, int(id))
		}
	}
	if len(piece) == 1 {
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
	ids := st.merge(m, piece)
	m.cache.put(piece, ids)
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	m.scratch.Put(st)
	return dst
}

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
	syms  []symbol
	queue mergeQueue
}

// shortPiece is the length up to which merging rescans the pairs instead of keeping a queue: words are short,
// and for them a linear scan is cheaper than heap upkeep.
const shortPiece = 12

// merge applies the merge rules to piece and returns a fresh slice of ids.
func (st *mergeState) merge(m *bpe, piece string) []int32 {
	if len(piece) <= shortPiece {
		return mergeShort(m, piece)
	}
	st.syms = st.syms[:0]
	for i := 0; i < len(piece); i++ {
		st.syms = append(st.syms, symbol{id: m.byteID[piece[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	syms := st.syms
	syms[len(syms)-1].next = -1
	st.queue = st.queue[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mt, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
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
			if mt, ok := m.merges[pairKey(syms[left.prev].id, left.id)]; ok {
				q.push(newCandidate(mt, left.prev, syms[left.prev].id, left.id))
			}
		}
		if left.next >= 0 {
			if mt, ok := m.merges[pairKey(left.id, syms[left.next].id)]; ok {
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
	ids := make([]int32, 0, n)
	for i := int32(0); i >= 0; i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	return ids
}

// mergeShort merges a short piece by scanning: each round merges the lowest-ranked adjacent pair, the
// leftmost among equals, which is the order the queue gives.
func mergeShort(m *bpe, piece string) []int32 {
	var buf [shortPiece]int32
	ids := buf[:len(piece)]
	for i := 0; i < len(piece); i++ {
		ids[i] = m.byteID[piece[i]]
	}
	for len(ids) > 1 {
		best, at := mergeTo{rank: -1}, -1
		for i := 0; i+1 < len(ids); i++ {
			if mt, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok && (at < 0 || mt.rank < best.rank) {
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
