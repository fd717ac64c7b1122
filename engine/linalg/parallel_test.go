package linalg

import (
	"sync"
	"sync/atomic"
	"testing"
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
