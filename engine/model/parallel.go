package model

import (
	"runtime"

	"github.com/trainyard/trainyard/engine/linalg"
)

// parallel runs fn(worker, i) for i in [0, n) on up to GOMAXPROCS goroutines (the caller's and linalg's
// helpers). Tasks must write disjoint outputs, so results do not depend on scheduling; worker indexes
// per-goroutine scratch space. The products a task runs take no goroutines of their own meanwhile
// (linalg.Occupy): nested, three goroutines shared two cores.
func parallel(n int, fn func(worker, i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(0, i)
		}
		return
	}
	defer linalg.Occupy(workers)()
	linalg.ParallelFor(workers, n, fn)
}

// maxWorkers is the number of scratch slots parallel may use.
func maxWorkers() int { return runtime.GOMAXPROCS(0) }
