package model

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/internal/prefault"
)

// Cache is the key/value cache of one generated sequence: per layer, the post-RoPE keys and values of every
// position, laid out head by head ([kvHeads × capacity × headDim]: the keys of one head for positions
// 0, 1, … are contiguous), so that attending reads each head's keys and values as one contiguous stream.
//
// A cache may share its first positions with another (SharePrefix: the prompt of a group of rollouts, or of
// the n completions of one request): they are read from that cache, and attending reads them as a run of
// their own. A group's rollouts then read their prompt's keys and values from one place, which a core's
// caches keep between the group's sequences, instead of each streaming its own copy from memory.
type Cache struct {
	K, V      [][]float32
	Len       int
	cap       int
	heads, hd int // key/value heads and their width
	// base holds positions [0, baseLen) (its own: bases are never shared caches themselves); K and V hold
	// the positions from baseLen on, at their usual places.
	base    *Cache
	baseLen int
	// slab holds K and V; pool, when set, takes it back once refs (the cache's owner, and each cache that
	// reads positions from this one) falls to zero.
	slab []float32
	pool *CachePool
	refs atomic.Int32
}

// NewCache returns an empty cache able to hold capacity positions (at most the model's context).
func (w *Weights) NewCache(capacity int) *Cache {
	capacity = min(capacity, w.Cfg.MaxSeqLen)
	return newCache(w.Cfg.Layers, w.Cfg.KVHeads, w.Cfg.HeadDim, capacity)
}

// NewPooledCache is NewCache drawing on pool (nil: NewCache): the capacity is rounded up to a multiple of
// cacheClass positions (within the context), so that the caches of similar requests (an RL iteration's
// rollouts) take each other's memory; Release hands it back.
func (w *Weights) NewPooledCache(pool *CachePool, capacity int) *Cache {
	if pool == nil {
		return w.NewCache(capacity)
	}
	capacity = min(roundUp(capacity, cacheClass), w.Cfg.MaxSeqLen)
	return newCacheFrom(pool, w.Cfg.Layers, w.Cfg.KVHeads, w.Cfg.HeadDim, capacity)
}

// cacheClass is the step of a pooled cache's capacity in positions.
const cacheClass = 64

func roundUp(n, m int) int { return (n + m - 1) / m * m }

func newCache(layers, heads, hd, capacity int) *Cache {
	return newCacheFrom(nil, layers, heads, hd, capacity)
}

func newCacheFrom(pool *CachePool, layers, heads, hd, capacity int) *Cache {
	c := &Cache{K: make([][]float32, layers), V: make([][]float32, layers), cap: capacity, heads: heads, hd: hd, pool: pool}
	c.refs.Store(1)
	per := capacity * heads * hd
	// A slab from the pool holds an earlier cache's keys and values: a cache reads only the positions it
	// has written.
	slab := pool.get(capacity)
	if slab == nil {
		slab = make([]float32, 2*layers*per)
		if int64(len(slab))*4 <= prefaultCacheBytes {
			prefault.Slice(slab)
		}
	}
	c.slab = slab
	for l := range c.K {
		c.K[l] = slab[2*l*per : (2*l+1)*per : (2*l+1)*per]
		c.V[l] = slab[(2*l+1)*per : (2*l+2)*per : (2*l+2)*per]
	}
	return c
}

// CachePool keeps the memory of released caches (Cache.Release) for new ones of the same capacity, up to a
// limit. An RL iteration's rollouts make a cache each (10 MB at SmolLM2-135M's width for 226 positions) and
// drop them all at the end; made afresh every iteration, they were written into memory the process had
// never touched whenever the heap had grown since, at a page fault per 4 KiB, a second of CPU or more in
// `make bench-loop`'s slower iterations. Safe for concurrent use.
type CachePool struct {
	mu    sync.Mutex
	free  map[int][][]float32 // by capacity
	bytes int64
	limit int64
}

// NewCachePool returns a pool that keeps at most limit bytes of released caches.
func NewCachePool(limit int64) *CachePool {
	return &CachePool{free: map[int][][]float32{}, limit: limit}
}

func (p *CachePool) get(capacity int) []float32 {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.free[capacity]
	if len(list) == 0 {
		return nil
	}
	s := list[len(list)-1]
	p.free[capacity] = list[:len(list)-1]
	p.bytes -= int64(len(s)) * 4
	return s
}

func (p *CachePool) put(capacity int, s []float32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+int64(len(s))*4 > p.limit {
		return
	}
	p.free[capacity] = append(p.free[capacity], s)
	p.bytes += int64(len(s)) * 4
}

// Bytes is the memory the pool keeps.
func (p *CachePool) Bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// Release ends the cache's use by its owner: once no other cache reads positions from it, its memory goes
// back to its pool (a cache without one is left to the collector). It must not be used after, and is
// released once.
func (c *Cache) Release() {
	if b := c.base; b != nil {
		c.base, c.baseLen = nil, 0
		b.unref()
	}
	c.unref()
}

func (c *Cache) unref() {
	if c.refs.Add(-1) != 0 || c.pool == nil {
		return
	}
	c.pool.put(c.cap, c.slab)
	c.K, c.V, c.slab = nil, nil, nil // a use after this fails loudly instead of reading another cache's values
}

// prefaultCacheBytes is the largest cache whose memory is mapped in when it is made. A cache is one slab, written
// a position at a time across every layer and head: a fresh slab took a page fault per 4 KiB as decoding
// reached it, and under a hypervisor that takes an exit per fault (the 2-core Zen 5 VM) a rollout phase's 32
// caches of 10 MB spent a second or more of CPU in them once the service's heap grew into fresh memory
// (the collector lets it grow by the size of the live heap, gigabytes once training has run). A request
// without max_tokens gets room for the model's whole context, most of which it never writes: that stays
// unmapped until written.
const prefaultCacheBytes = 64 << 20

// head returns the keys or values of head h in layer slice x (all capacity positions).
func (c *Cache) head(x []float32, h int) []float32 {
	return x[h*c.cap*c.hd : (h+1)*c.cap*c.hd]
}

// put stores rows of packed keys and values ([n × heads·hd], as a pass computes them) at positions
// pos, pos+1, … of layer l.
func (c *Cache) put(l, pos int, k, v []float32) {
	kd := c.heads * c.hd
	for r := 0; r < len(k)/kd; r++ {
		for h := range c.heads {
			at := (h*c.cap + pos + r) * c.hd
			copy(c.K[l][at:at+c.hd], k[r*kd+h*c.hd:r*kd+(h+1)*c.hd])
			copy(c.V[l][at:at+c.hd], v[r*kd+h*c.hd:r*kd+(h+1)*c.hd])
		}
	}
}

// Clone returns a cache holding c's positions, with c's capacity (to fork one prefilled prompt into n
// completions): it shares them with c (SharePrefix), so c must not change them — positions are only ever
// appended.
func (c *Cache) Clone() *Cache {
	d := newCacheFrom(c.pool, len(c.K), c.heads, c.hd, c.cap)
	d.SharePrefix(c, c.Len)
	return d
}

// SharePrefix starts the empty cache c with the first n positions of src without copying them: c reads them
// from src, or from the cache src shares them from. Their keys and values must not change while c is in use,
// which holds for the positions a cache already has (a pass only appends) and for a prompt cache's compact
// copies. Where src's first n positions are partly its own and partly shared, they are copied instead.
func (c *Cache) SharePrefix(src *Cache, n int) {
	c.checkPrefix(src, n)
	switch {
	case n == 0:
	case src.base == nil:
		c.base, c.baseLen = src, n
		src.refs.Add(1)
	case n <= src.baseLen:
		c.base, c.baseLen = src.base, n
		src.base.refs.Add(1)
	default:
		c.CopyPrefix(src, n)
		return
	}
	c.Len = n
}

// Rebase makes c read all its positions from src, a cache of its own (no base) holding the same ones (a
// compact copy of c, as a prompt cache keeps), instead of from its arrays or from the cache it shared a start
// with: caches that then share c's positions read them from src, one level deep, without a copy, and
// decoding attends to them once for all of them. c's values must equal src's; c grows as before.
func (c *Cache) Rebase(src *Cache) {
	if src.base != nil || src.Len != c.Len || len(src.K) != len(c.K) || src.heads != c.heads || src.hd != c.hd {
		panic(fmt.Sprintf("model: rebase a cache of %d positions on one of %d", c.Len, src.Len))
	}
	if c.Len > 0 {
		old := c.base
		c.base, c.baseLen = src, src.Len
		src.refs.Add(1)
		if old != nil {
			old.unref()
		}
	}
}

// Shared is how many of the cache's first positions it reads from another cache (SharePrefix).
func (c *Cache) Shared() int { return c.baseLen }

func (c *Cache) checkPrefix(src *Cache, n int) {
	if c.Len != 0 || n > src.Len || n > c.cap || len(src.K) != len(c.K) || src.heads != c.heads || src.hd != c.hd {
		panic(fmt.Sprintf("model: copy %d of %d positions into a cache of %d/%d", n, src.Len, c.Len, c.cap))
	}
}

// runs returns head h's keys and values in layer l for positions [from, to) as at most two contiguous runs,
// rs[:n]: the shared ones (from the base) and the cache's own. Each run's start is its first position. An
// array, not a slice, so that attention's every head and layer does not allocate one.
func (c *Cache) runs(l, h, from, to int) (rs [2]kvRun, n int) {
	if from < c.baseLen {
		b := c.base
		end := min(to, c.baseLen)
		rs[n] = kvRun{k: b.head(b.K[l], h)[from*c.hd : end*c.hd], v: b.head(b.V[l], h)[from*c.hd : end*c.hd], start: from, n: end - from}
		n, from = n+1, end
	}
	if from < to {
		rs[n] = kvRun{k: c.head(c.K[l], h)[from*c.hd : to*c.hd], v: c.head(c.V[l], h)[from*c.hd : to*c.hd], start: from, n: to - from}
		n++
	}
	return rs, n
}

// prefetchOwn asks for the keys (or values) of ca's positions from `from` to its newest (the one being
// decoded) of head h in layer l.
func prefetchOwn(ca *Cache, l, h, from int, keys bool) {
	rs, nr := ca.runs(l, h, from, ca.Len+1)
	for _, r := range rs[:nr] {
		if keys {
			linalg.Prefetch(r.k)
		} else {
			linalg.Prefetch(r.v)
		}
	}
}

// kvRun is n of a head's cached positions from position start on, keys and values contiguous (n rows of hd).
type kvRun struct {
	k, v     []float32
	start, n int
}

// scoreRuns sets the scores of rows queries (q, stride ldq) against every run's keys, scaled: column
// r.start − from of s (stride lds) on.
func scoreRuns(runs []kvRun, rows, hd int, scale float32, q []float32, ldq int, s []float32, lds, from int) {
	for _, r := range runs {
		linalg.Sgemm(false, true, rows, r.n, hd, scale, q, ldq, r.k, hd, 0, s[r.start-from:], lds)
	}
}

// weighRuns sets out (stride ldo) to the rows of weights in s (laid out as scoreRuns wrote them) times the
// runs' values, summed over the runs.
func weighRuns(runs []kvRun, rows, hd int, s []float32, lds, from int, out []float32, ldo int) {
	for j, r := range runs {
		linalg.Sgemm(false, false, rows, hd, r.n, 1, s[r.start-from:], lds, r.v, hd, float32(min(j, 1)), out, ldo)
	}
}

// attendChunk is the most positions of a run that the decoding kernels take over every query row before
// the next: a chunk of keys or values, 16 KiB, stays in L1 while the rows pass.
func attendChunk(hd int) int { return max(8, 4096/hd/8*8) }

// scoreRows is scoreRuns for a decoding step's few query rows (a sequence's query heads that share a
// key/value head, or a group's): linalg.AttendScores over each chunk of a run's keys for every row. As
// products of 3 rows the scores went to Sgemm's naive loop or its blocked driver's packing.
func scoreRows(runs []kvRun, rows, hd int, scale float32, q []float32, ldq int, s []float32, lds, from int) {
	ch := attendChunk(hd)
	for _, r := range runs {
		for t0 := 0; t0 < r.n; t0 += ch {
			n := min(ch, r.n-t0)
			linalg.AttendScores(q, ldq, rows, r.k[t0*hd:], hd, n, scale, s[r.start-from+t0:], lds)
		}
	}
}

// weighRows is weighRuns for a decoding step's few query rows (linalg.AttendWeigh), chunked as scoreRows;
// with add, the sums are added to out.
func weighRows(runs []kvRun, rows, hd int, s []float32, lds, from int, out []float32, ldo int, add bool) {
	ch := attendChunk(hd)
	for j, r := range runs {
		for t0 := 0; t0 < r.n; t0 += ch {
			n := min(ch, r.n-t0)
			linalg.AttendWeigh(s[r.start-from+t0:], lds, rows, r.v[t0*hd:], hd, n, out, ldo, add || j > 0 || t0 > 0)
		}
	}
}

// CopyPrefix fills the empty cache c with the first n positions src holds (a prompt, or the start of one,
// that another request prefilled); c must have room for them.
func (c *Cache) CopyPrefix(src *Cache, n int) {
	c.checkPrefix(src, n)
	for l := range c.K {
		for h := range c.heads {
			rs, nr := src.runs(l, h, 0, n)
			for _, r := range rs[:nr] {
				copy(c.head(c.K[l], h)[r.start*c.hd:], r.k)
				copy(c.head(c.V[l], h)[r.start*c.hd:], r.v)
			}
		}
	}
	c.Len = n
}

// Compact returns a copy of c that holds its positions and no room for more (what a prompt cache keeps).
func (c *Cache) Compact() *Cache {
	d := newCache(len(c.K), c.heads, c.hd, c.Len)
	d.CopyPrefix(c, c.Len)
	return d
}

// Bytes is the memory the cache takes.
func (c *Cache) Bytes() int64 {
	return int64(len(c.K)) * 2 * int64(c.cap*c.heads*c.hd) * 4
}

// Prefill runs tokens through the model into an empty cache and returns the logits of the last position.
func (w *Weights) Prefill(ctx context.Context, c *Cache, tokens []int, lora *LoRA) ([]float32, error) {
	return w.PrefillBatch(ctx, []*Cache{c}, [][]int{tokens}, lora)
}

// PrefillBatch prefills several prompts, each into its own empty cache, in one forward pass (causal
// attention stays within each prompt), so the weights are read once for the group instead of once per
// prompt. It returns [len(prompts) × vocab] logits: the last position of each prompt. A prompt's result
// differs from prefilling it alone only by the rounding of the matrix kernels for a different row count.
func (w *Weights) PrefillBatch(ctx context.Context, caches []*Cache, prompts [][]int, lora *LoRA) ([]float32, error) {
	if len(caches) != len(prompts) || len(prompts) == 0 {
		return nil, fmt.Errorf("%w: %d caches for %d prompts", ErrInput, len(caches), len(prompts))
	}
	for i, c := range caches {
		if c.Len != 0 || len(prompts[i]) > c.cap {
			return nil, fmt.Errorf("%w: prefill of %d tokens into cache of %d/%d", ErrInput, len(prompts[i]), c.Len, c.cap)
		}
	}
	kd := w.Cfg.KVDim()
	offs := make([]int, len(prompts)+1) // the rows Forward packs each prompt into
	for i, t := range prompts {
		offs[i+1] = offs[i] + len(t)
	}
	p, err := w.Forward(ctx, prompts, PassOptions{LoRA: lora, OnKV: func(l int, k, v []float32) {
		for i, c := range caches {
			c.put(l, 0, k[offs[i]*kd:offs[i+1]*kd], v[offs[i]*kd:offs[i+1]*kd])
		}
	}})
	if err != nil {
		return nil, err // the caches' lengths are unchanged: what a cancelled pass stored is ignored
	}
	rows := make([]int, len(prompts))
	for i, c := range caches {
		c.Len = len(prompts[i])
		rows[i] = offs[i+1] - 1
	}
	return p.Logits(rows), nil
}

// Decode appends one token to each cache and returns [len(caches) × vocab] next-token logits. Every row is
// computed independently of the others, so batching does not change a sequence's result beyond the
// matmul kernel's rounding.
func (w *Weights) Decode(ctx context.Context, caches []*Cache, tokens []int, lora *LoRA) ([]float32, error) {
	return w.decode(ctx, caches, tokens, lora, nil, nil, nil)
}

// DecodeAdapters is Decode with each sequence under its own adapter (nil = the base model): the base
// weights are read once for the whole step, and each run of consecutive sequences on the same adapter adds
// its low-rank term (order the caches by adapter to make the runs long). The logits are written into out
// when it has room for them (a buffer reused step after step: at a 150k-token vocabulary a step of 64
// sequences has 39 MB of them), else into a new slice.
//
// With ar, the pass takes its buffers from it, after resetting it (buffers it handed out before are no longer
// valid): a loop of decoding steps then reuses one set of buffers instead of allocating them every step.
func (w *Weights) DecodeAdapters(ctx context.Context, caches []*Cache, tokens []int, loras []*LoRA, out []float32, ar *Arena) ([]float32, error) {
	if len(loras) != len(caches) {
		return nil, fmt.Errorf("%w: %d adapters for %d caches", ErrInput, len(loras), len(caches))
	}
	return w.decode(ctx, caches, tokens, nil, loras, out, ar)
}

func (w *Weights) decode(ctx context.Context, caches []*Cache, tokens []int, lora *LoRA, loras []*LoRA, out []float32, ar *Arena) ([]float32, error) {
	if len(caches) != len(tokens) {
		return nil, fmt.Errorf("%w: %d caches for %d tokens", ErrInput, len(caches), len(tokens))
	}
	chunks := make([][]int, len(tokens))
	for i := range tokens {
		chunks[i] = tokens[i : i+1]
	}
	return w.extend(ctx, caches, chunks, lora, loras, out, ar)
}

// ExtendAdapters appends a chunk of tokens to each cache, which may already hold positions (a prompt
// prefilled a chunk at a time between decoding steps, or continued from a prefix another request
// prefilled), each sequence under its own adapter as in DecodeAdapters, and returns the logits of each
// chunk's last position ([len(caches) × vocab], into out when it has room). A chunk attends causally to
// its cache and to itself. ar is as in DecodeAdapters.
func (w *Weights) ExtendAdapters(ctx context.Context, caches []*Cache, chunks [][]int, loras []*LoRA, out []float32, ar *Arena) ([]float32, error) {
	if len(loras) != len(caches) {
		return nil, fmt.Errorf("%w: %d adapters for %d caches", ErrInput, len(loras), len(caches))
	}
	return w.extend(ctx, caches, chunks, nil, loras, out, ar)
}

func (w *Weights) extend(ctx context.Context, caches []*Cache, chunks [][]int, lora *LoRA, loras []*LoRA, out []float32, ar *Arena) ([]float32, error) {
	if len(caches) != len(chunks) || len(chunks) == 0 {
		return nil, fmt.Errorf("%w: %d caches for %d chunks", ErrInput, len(caches), len(chunks))
	}
	ar.Reset()
	p := &Pass{w: w, lora: lora, seqLoRA: loras, decode: caches, seqs: chunks, offs: make([]int, len(chunks)+1),
		opt: PassOptions{Arena: ar}}
	for i, chunk := range chunks {
		if len(chunk) == 0 || caches[i].Len+len(chunk) > caches[i].cap {
			return nil, fmt.Errorf("%w: %d tokens into a cache of %d/%d", ErrInput, len(chunk), caches[i].Len, caches[i].cap)
		}
		for t, id := range chunk {
			if id < 0 || id >= w.Cfg.VocabSize {
				return nil, fmt.Errorf("%w: token id %d (vocabulary %d)", ErrInput, id, w.Cfg.VocabSize)
			}
			p.pos = append(p.pos, caches[i].Len+t)
		}
		p.offs[i+1] = p.offs[i] + len(chunk)
	}
	p.N = p.offs[len(chunks)]
	if p.N == 1 && !w.noRowMajor {
		// One sequence: each product is a matrix-vector product too short to hand to a parked goroutine. (The
		// products over the pair layout or the packed panels split theirs on linalg's helpers, which a
		// spinning partner would keep off a core: weights held only so get no Team.)
		p.team = linalg.NewTeam()
		defer p.team.Close()
	}
	if err := p.run(ctx, p.embed()); err != nil {
		return nil, err
	}
	rows := make([]int, len(chunks))
	for i, c := range caches {
		c.Len += len(chunks[i])
		rows[i] = p.offs[i+1] - 1
	}
	if cap(out) < len(rows)*w.Cfg.VocabSize {
		return p.Logits(rows), nil
	}
	return p.LogitsInto(out, rows), nil
}

// attendCache appends this pass's keys/values to every cache and attends each row's query over its cache:
// the positions before its chunk and those of its chunk up to its own (in a local layer, those of its
// window only: the cache keeps every position, and a decoding step reads the window's).
func (p *Pass) attendCache(l int, lc *layerCache) {
	c := p.w.Cfg
	kd, qd, hd := c.KVDim(), c.QDim(), c.HeadDim
	for b, ca := range p.decode {
		ca.put(l, ca.Len, lc.k[p.offs[b]*kd:p.offs[b+1]*kd], lc.v[p.offs[b]*kd:p.offs[b+1]*kd])
	}
	group := c.Heads / c.KVHeads
	scale, win, cp := c.attnScale(), c.window(l), c.AttnSoftcap
	work := func(wk, i int) {
		b, kvh := i/c.KVHeads, i%c.KVHeads
		ca := p.decode[b]
		r0, T := p.offs[b], p.offs[b+1]-p.offs[b]
		n := ca.Len + T // positions in the cache once this chunk is in
		if T == 1 {
			// Decoding: the query heads that share a key/value head attend together, one product each with the
			// cached keys and values, which are then read once per key/value head, not once per query head.
			// A shared prompt is a run of its own (Cache.runs).
			lo := windowStart(n-1, win)
			m := n - lo
			sc := p.workerScratch(wk, group*m)
			q := lc.q[r0*qd+kvh*group*hd:]
			rs, nr := ca.runs(l, kvh, lo, n)
			scoreRows(rs[:nr], group, hd, scale, q, hd, sc, m, lo)
			for g := range group {
				if cp > 0 {
					softcap(sc[g*m:(g+1)*m], cp)
				}
				softmaxCausalRow(sc[g*m:(g+1)*m], m-1)
			}
			weighRows(rs[:nr], group, hd, sc, m, lo, lc.att[r0*qd+kvh*group*hd:], hd, false)
			return
		}
		// A chunk: per query head, its T rows against every position, row t masked past position Len+t.
		sc := p.workerScratch(wk, T*n)
		rs, nr := ca.runs(l, kvh, 0, n)
		for g := range group {
			h := kvh*group + g
			scoreRuns(rs[:nr], T, hd, scale, lc.q[r0*qd+h*hd:], qd, sc, n, 0)
			for t := range T {
				row, i := sc[t*n:(t+1)*n], ca.Len+t
				lo := windowStart(i, win)
				if cp > 0 {
					softcap(row[lo:i+1], cp)
				}
				softmaxWindowRow(row, lo, i)
			}
			weighRuns(rs[:nr], T, hd, sc, n, 0, lc.att[r0*qd+h*hd:], qd)
		}
	}
	if len(p.decode) == 1 && p.N == 1 {
		for i := 0; i < c.KVHeads; i++ {
			work(0, i)
		}
		return
	}
	alone, groups := p.sharedBases(l)
	parallel((len(alone)+len(groups))*c.KVHeads, func(wk, i int) {
		u, kvh := i/c.KVHeads, i%c.KVHeads
		if u < len(alone) {
			work(wk, alone[u]*c.KVHeads+kvh)
			return
		}
		p.attendShared(wk, l, lc, groups[u-len(alone)], kvh)
	})
}

// sharedBases splits the rows of a decoding step into those attended one sequence at a time and groups of
// decoding rows (one token each) whose caches start with the same shared run (Cache.base: the prompt of a
// group of rollouts), which attendShared takes together. In a local layer whose window starts past
// position 0 for any of them, they stay apart.
func (p *Pass) sharedBases(l int) (alone []int, groups [][]int) {
	type key struct {
		base *Cache
		n    int
	}
	var at map[key]int
	win := p.w.Cfg.window(l)
	for b, ca := range p.decode {
		T := p.offs[b+1] - p.offs[b]
		if T != 1 || ca.base == nil || windowStart(ca.Len, win) > 0 {
			alone = append(alone, b)
			continue
		}
		if at == nil {
			at = map[key]int{}
		}
		k := key{ca.base, ca.baseLen}
		g, ok := at[k]
		if !ok {
			g = len(groups)
			at[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], b)
	}
	for g := 0; g < len(groups); g++ { // a group of one gains nothing
		if len(groups[g]) == 1 {
			alone = append(alone, groups[g][0])
			groups = append(groups[:g], groups[g+1:]...)
			g--
		}
	}
	return alone, groups
}

// attendShared attends one decoding row of each of the sequences bs, whose caches share their first run of
// P positions, over key/value head kvh: every sequence's query heads scored against each chunk of the
// shared keys before the next chunk, and weighed with each chunk of the shared values likewise (the chunk
// read from memory once for the group and kept in L1 while the rows pass, not once per sequence), then
// each sequence's own positions after them, as attendCache does alone.
func (p *Pass) attendShared(wk, l int, lc *layerCache, bs []int, kvh int) {
	c := p.w.Cfg
	qd, hd, G := c.QDim(), c.HeadDim, c.Heads/c.KVHeads
	scale, cp := c.attnScale(), c.AttnSoftcap
	P := p.decode[bs[0]].baseLen
	W := P // the widest row: the shared run and the longest own run
	for _, b := range bs {
		W = max(W, p.decode[b].Len+1)
	}
	sc := p.workerScratch(wk, len(bs)*G*W)
	rows := func(lane []float32, b int) []float32 { return lane[p.offs[b]*qd+kvh*G*hd:] } // b's G rows
	// A sequence's own keys and values are a few kilobytes per head that
	// nothing else of the token reads: too short a stream for the hardware
	// prefetcher, so the next sequence's keys and this one's values are
	// asked for while this one is scored.
	prefetchOwn(p.decode[bs[0]], l, kvh, P, true)
	shared, _ := p.decode[bs[0]].runs(l, kvh, 0, P)
	sh, ch := shared[0], attendChunk(hd)
	for t0 := 0; t0 < P; t0 += ch {
		n := min(ch, P-t0)
		for i, b := range bs {
			linalg.AttendScores(rows(lc.q, b), hd, G, sh.k[t0*hd:], hd, n, scale, sc[i*G*W+t0:], W)
		}
	}
	for i, b := range bs {
		ca := p.decode[b]
		n := ca.Len + 1
		if i+1 < len(bs) {
			prefetchOwn(p.decode[bs[i+1]], l, kvh, P, true)
		}
		prefetchOwn(ca, l, kvh, P, false)
		rs, nr := ca.runs(l, kvh, P, n)
		scoreRows(rs[:nr], G, hd, scale, rows(lc.q, b), hd, sc[i*G*W:], W, 0)
		for g := range G {
			row := sc[(i*G+g)*W : (i*G+g)*W+n]
			if cp > 0 {
				softcap(row, cp)
			}
			softmaxCausalRow(row, n-1)
		}
	}
	for t0 := 0; t0 < P; t0 += ch {
		n := min(ch, P-t0)
		for i, b := range bs {
			linalg.AttendWeigh(sc[i*G*W+t0:], W, G, sh.v[t0*hd:], hd, n, rows(lc.att, b), hd, t0 > 0)
		}
	}
	for i, b := range bs {
		ca := p.decode[b]
		rs, nr := ca.runs(l, kvh, P, ca.Len+1)
		weighRows(rs[:nr], G, hd, sc[i*G*W:], W, 0, rows(lc.att, b), hd, P > 0) // onto the shared run's sums
	}
}
