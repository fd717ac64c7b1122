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

// threadsFor picks how many goroutines a product of m·n·k multiply-adds deserves: one below the size where
// starting and joining goroutines costs more than it saves, otherwise GOMAXPROCS.
func threadsFor(m, n, k int) int {
	const minParallelMACs = 1 << 19
	if m*n*k < minParallelMACs {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}
