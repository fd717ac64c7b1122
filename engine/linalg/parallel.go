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
