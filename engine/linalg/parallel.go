package linalg

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelFor calls fn(worker, i) for every i in [0, count) on up to workers goroutines (the caller is worker
// 0). Items are handed out through an atomic counter, so a core slowed by other load simply takes fewer.
func parallelFor(workers, count int, fn func(worker, i int)) {
	workers = min(workers, count)
	if workers <= 1 {
		for i := 0; i < count; i++ {
			fn(0, i)
		}
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
