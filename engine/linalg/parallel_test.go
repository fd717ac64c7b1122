package linalg

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"
)

// TestParallelFor: every item runs exactly once, on a worker index below the workers asked for, whether the
// helpers take the call or, while another call holds them, goroutines of its own: several goroutines call
// at once, some calls nested in another's items, some with a single item or worker.
func TestParallelFor(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for call := range 200 {
				workers, count := 1+(g+call)%4, 1+(call*7)%50
				runs := make([]atomic.Int32, count)
				parallelFor(workers, count, func(w, i int) {
					if w < 0 || w >= workers {
						t.Errorf("worker %d of %d", w, workers)
					}
					runs[i].Add(1)
					if call%10 == 0 && i == 0 { // a product inside another's item
						inner := make([]atomic.Int32, 5)
						parallelFor(2, 5, func(_, j int) { inner[j].Add(1) })
						for j := range inner {
							if n := inner[j].Load(); n != 1 {
								t.Errorf("nested item %d ran %d times", j, n)
							}
						}
					}
				})
				for i := range runs {
					if n := runs[i].Load(); n != 1 {
						t.Errorf("goroutine %d call %d: item %d of %d ran %d times", g, call, i, count, n)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// captured runs a parallelFor whose items write to a new slice and returns a weak pointer to the slice:
// nothing but the call's closure ever referenced it.
func captured() weak.Pointer[float32] {
	big := make([]float32, 1<<16)
	parallelFor(2, 64, func(_, i int) { // items long enough that a helper joins
		for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		}
		big[i]++
	})
	return weak.Make(&big[0])
}

// TestParallelForKeepsNothing: once parallelFor returns, nothing of the call stays reachable from the
// helpers (a helper that remembered its last job by pointer kept a training pass's activations alive until
// the next product, which TestEstimateStepMemory caught as a previous step's heap).
func TestParallelForKeepsNothing(t *testing.T) {
	for range 20 {
		held := captured()
		runtime.GC()
		runtime.GC()
		if held.Value() != nil {
			t.Fatal("a finished parallelFor's items still hold what they captured")
		}
	}
}
