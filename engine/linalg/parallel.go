package linalg

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ParallelFor is parallelFor for the engine's own splits of its work (attention's sequences and heads).
func ParallelFor(workers, count int, fn func(worker, i int)) { parallelFor(workers, count, fn) }

// parallelFor calls fn(worker, i) for every i in [0, count) on up to workers goroutines (the caller is worker
// 0). Items are handed out through an atomic counter, so a core slowed by other load simply takes fewer.
//
// The other workers are the helpers' (below) when no other parallelFor holds them, else goroutines started
// for the call.
func parallelFor(workers, count int, fn func(worker, i int)) {
	workers = min(workers, count)
	if workers <= 1 {
		for i := 0; i < count; i++ {
			fn(0, i)
		}
		return
	}
	if helped(workers, count, fn) {
		return
	}
	var next atomic.Int64
	run := func(w int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= count {
				return
			}
			fn(w, i)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
}

// parallelRuns calls fn(worker, lo, hi) for runs [lo, hi) of at most run consecutive items that together
// cover [0, count) once, on up to workers goroutines. Each worker owns a contiguous region of the items (an
// even share) and takes its runs in order from the region's front, so what its items read (a product's
// panels of weights) streams from memory in one sequential pass; a worker whose region is done takes runs
// from the back of the region with the most left. A static split into one run per worker streamed as well,
// but then the worker that started late or was slowed by other load decided when the call ended: a
// decoding batch's caller spun waiting for it at the end of every product (helped, 3% of the rollouts'
// CPU), and one preempted core held up both.
func parallelRuns(workers, count, run int, fn func(worker, lo, hi int)) {
	run = max(run, 1)
	workers = min(workers, (count+run-1)/run)
	if workers <= 1 {
		for lo := 0; lo < count; lo += run {
			fn(0, lo, min(count, lo+run))
		}
		return
	}
	regions := make([]runRegion, workers)
	for r := range regions {
		regions[r].set(r*count/workers, (r+1)*count/workers)
	}
	parallelFor(workers, workers, func(w, r int) {
		for {
			lo, hi, ok := regions[r].take(run, false)
			if !ok {
				break
			}
			fn(w, lo, hi)
		}
		for {
			victim, most := -1, 0
			for v := range regions {
				if left := regions[v].left(); left > most {
					victim, most = v, left
				}
			}
			if victim < 0 {
				return
			}
			if lo, hi, ok := regions[victim].take(run, true); ok {
				fn(w, lo, hi)
			}
		}
	})
}

// runRegion is parallelRuns' region of items not yet taken, [lo, hi), its bounds packed in one word (lo in
// the low half) so that its owner, taking from the front, and others, taking from the back, claim runs
// with one compare-and-swap each.
type runRegion struct{ bounds atomic.Uint64 }

func (r *runRegion) set(lo, hi int) { r.bounds.Store(uint64(hi)<<32 | uint64(lo)) }

func (r *runRegion) left() int {
	b := r.bounds.Load()
	return int(b>>32) - int(uint32(b))
}

// take claims up to n items from the front (or, with back, the back) of the region.
func (r *runRegion) take(n int, back bool) (lo, hi int, ok bool) {
	for {
		b := r.bounds.Load()
		lo, hi = int(uint32(b)), int(b>>32)
		if lo >= hi {
			return 0, 0, false
		}
		n := min(n, hi-lo)
		nb := uint64(hi)<<32 | uint64(lo+n)
		if back {
			nb = uint64(hi-n)<<32 | uint64(lo)
		}
		if r.bounds.CompareAndSwap(b, nb) {
			if back {
				return hi - n, hi, true
			}
			return lo, lo + n, true
		}
	}
}

// The helpers: long-lived goroutines, GOMAXPROCS − 1 of them, that take parallelFor's items beside its
// caller. A training step or a decoding step is thousands of products, each split once or twice, tens to
// hundreds of microseconds apart; a goroutine started per split waits for its thread to be woken, about
// 11 µs on the 2-core VM (BenchmarkHandoff), at every split, and the caller waits for it at the end. A
// helper that has just finished a job spins for helperSpin, looking for the next, before it parks: within a
// step it finds the next split at once. (A Team is this for one decoding sequence's products, spinning for
// the whole step.)
var helpers struct {
	job     atomic.Pointer[helperJob] // the job being handed out, nil between jobs
	jobs    atomic.Uint64             // jobs handed out so far, each job's seq
	parked  atomic.Int32              // helpers blocked on wake
	wake    chan struct{}
	started sync.Once
}

// helperSpin is how long a helper looks for the next job before it parks.
const helperSpin = 50 * time.Microsecond

// helperJob is one parallelFor's items.
type helperJob struct {
	seq     uint64
	fn      func(worker, i int)
	count   int64
	next    atomic.Int64 // the next item to claim
	pending atomic.Int64 // items not yet finished
	ids     atomic.Int32 // worker ids handed to helpers (the caller is 0)
	workers int32
}

// helped runs the items with the helpers and reports true, or reports false, running nothing, when another
// parallelFor holds them (concurrent products: the caller starts goroutines of its own).
func helped(workers, count int, fn func(worker, i int)) bool {
	helpers.started.Do(startHelpers)
	j := &helperJob{seq: helpers.jobs.Add(1), fn: fn, count: int64(count), workers: int32(workers)}
	j.pending.Store(int64(count))
	if !helpers.job.CompareAndSwap(nil, j) {
		return false
	}
	// Wake parked helpers (a helper about to park sees the job when it checks once more, after counting
	// itself parked).
	for n := min(int(helpers.parked.Load()), workers-1); n > 0; n-- {
		select {
		case helpers.wake <- struct{}{}:
		default:
		}
	}
	j.run(0)
	for spins := 0; j.pending.Load() > 0; spins++ {
		if spins%1024 == 1023 {
			runtime.Gosched()
		}
	}
	helpers.job.Store(nil)
	return true
}

// run claims and runs items as worker w until none are left.
func (j *helperJob) run(w int) {
	for i := j.next.Add(1) - 1; i < j.count; i = j.next.Add(1) - 1 {
		j.fn(w, int(i))
		j.pending.Add(-1)
	}
}

func startHelpers() {
	n := runtime.GOMAXPROCS(0) - 1
	helpers.wake = make(chan struct{}, max(n, 1))
	for range n {
		go helper()
	}
}

func helper() {
	// The last job is remembered by its number: a pointer to it would keep its items' closure, and what
	// that holds (a training pass's activations), alive until the next job.
	var last uint64
	idle := time.Now()
	for spins := 1; ; spins++ {
		if j := helpers.job.Load(); j != nil && j.seq != last {
			last = j.seq
			if id := j.ids.Add(1); id < j.workers {
				j.run(int(id))
			}
			idle, spins = time.Now(), 0
			continue
		}
		if spins%256 != 0 {
			continue
		}
		if time.Since(idle) < helperSpin {
			if spins%1024 == 0 {
				runtime.Gosched() // let anything else this P should run have it
			}
			continue
		}
		helpers.parked.Add(1)
		if j := helpers.job.Load(); j == nil || j.seq == last {
			<-helpers.wake
		}
		helpers.parked.Add(-1)
		idle, spins = time.Now(), 0
	}
}

// parallelCalls counts the Sgemm calls currently running with more than one goroutine.
var parallelCalls atomic.Int32

// Occupy tells the products that n goroutines of the caller's are running them already (its own split of
// a larger task, as the engine's attention heads are) until the returned release: while they run, each
// product takes fewer goroutines of its own, none when n covers every core, instead of nesting more
// goroutines under the caller's.
func Occupy(n int) (release func()) {
	parallelCalls.Add(int32(n))
	return func() { parallelCalls.Add(-int32(n)) }
}

// acquireWorkers picks how many goroutines a product of m·n·k multiply-adds deserves and returns it with the
// release to call when the product is done. Below minParallelMACs starting and joining goroutines costs more
// than it saves. Above it the cores are shared among the products running at the same time: the engine
// already runs attention heads from its own goroutines, and nesting more goroutines under those only adds
// scheduling and cache contention.
func acquireWorkers(m, n, k int) (int, func()) {
	const minParallelMACs = 1 << 21
	procs := runtime.GOMAXPROCS(0)
	if procs == 1 || m*n*k < minParallelMACs {
		return 1, func() {}
	}
	active := int(parallelCalls.Add(1))
	return max(1, procs/active), func() { parallelCalls.Add(-1) }
}

// acquireStreamWorkers is acquireWorkers for a product that streams a matrix from memory once and does little
// arithmetic per byte (a few rows of bfloat16 weights, fewRowsBF16): it is split by the bytes it reads, from
// minParallelBytes on, where one core's bandwidth (13–14 GB/s against 20–24 for two on the 2-core machine,
// BenchmarkStream) limits it, though its multiply-adds are below acquireWorkers' threshold. Matrix-vector
// products (one decoded token) are not split this way: each takes tens of microseconds, about what waking a
// second goroutine's thread costs, and splitting them measured no faster.
func acquireStreamWorkers(bytes int) (int, func()) {
	const minParallelBytes = 96 << 10
	procs := runtime.GOMAXPROCS(0)
	if procs == 1 || bytes < minParallelBytes {
		return 1, func() {}
	}
	active := int(parallelCalls.Add(1))
	return max(1, procs/active), func() { parallelCalls.Add(-1) }
}

// streamChunk is how many of n outputs one claim of a parallel streaming product takes: at most limit, and
// small enough that each of the workers claims several, so a core slowed by other load takes fewer.
func streamChunk(n, workers, limit int) int {
	if workers <= 1 {
		return min(n, limit)
	}
	return max(16, min(limit, (n+4*workers-1)/(4*workers)))
}
