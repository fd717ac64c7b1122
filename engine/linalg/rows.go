package linalg

import "runtime"

// minParallelWork is the element work below which ParallelRows stays on the caller's goroutine: starting and
// joining a goroutine costs about as much as a few tens of thousands of simple float operations, and the
// decoding path (one to a few rows per call) must not pay for it.
const minParallelWork = 1 << 15

// chunksPerWorker splits row ranges finer than one per worker, so that a core slowed by other load takes
// fewer chunks instead of holding everyone up.
const chunksPerWorker = 4

// ParallelRows calls fn over contiguous, disjoint ranges [lo, hi) that together cover [0, n), from up to
// GOMAXPROCS goroutines (the caller's included). work is the whole job's cost in element operations; below a
// threshold fn runs once as fn(0, n) on the caller's goroutine. fn must compute every row the same way
// whatever range it comes in (no reduction across rows), so results do not depend on the number of workers.
func ParallelRows(n, work int, fn func(lo, hi int)) {
	procs := runtime.GOMAXPROCS(0)
	if n <= 1 || procs == 1 || work < minParallelWork {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	chunks := min(n, procs*chunksPerWorker, max(1, work/minParallelWork))
	parallelFor(procs, chunks, func(_, i int) {
		fn(i*n/chunks, (i+1)*n/chunks)
	})
}
