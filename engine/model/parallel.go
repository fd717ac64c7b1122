package model

import (
	"runtime"

	"github.com/trainyard/trainyard/engine/linalg"
	"sync"
	"sync/atomic"
)

// parallel runs fn(worker, i) for i in [0, n) on up to GOMAXPROCS goroutines. Tasks must write disjoint
// outputs, so results do not depend on scheduling; worker indexes per-goroutine scratch space.
func parallel(n int, fn func(worker, i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(0, i)
		}
		return
	}
	defer linalg.Occupy(workers)()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(w, i)
			}
		}(w)
	}
	wg.Wait()
}

// maxWorkers is the number of scratch slots parallel may use.
func maxWorkers() int { return runtime.GOMAXPROCS(0) }
