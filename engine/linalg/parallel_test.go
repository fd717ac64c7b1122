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

// TestParallelRuns: every item is in exactly one run of at most run items, on a worker index below the
// workers asked for, whatever the split (regions of uneven size, more workers than runs, one item); with a
// worker slowed down, the other takes runs from the back of its region, and every worker's own runs come
// in order from its region's front.
func TestParallelRuns(t *testing.T) {
	for _, c := range []struct{ workers, count, run int }{{2, 0, 4}, {2, 1, 4}, {2, 7, 1}, {3, 10, 3}, {2, 96, 6},
		{4, 1000, 16}, {2, 12, 0}, {8, 5, 2}} {
		var mu sync.Mutex
		seen := make([]int, c.count)
		parallelRuns(c.workers, c.count, c.run, func(w, lo, hi int) {
			if w < 0 || w >= c.workers || lo < 0 || hi > c.count || hi <= lo || hi-lo > max(c.run, 1) {
				t.Errorf("%+v: worker %d got run [%d, %d)", c, w, lo, hi)
				return
			}
			mu.Lock()
			for i := lo; i < hi; i++ {
				seen[i]++
			}
			mu.Unlock()
		})
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("%+v: item %d ran %d times", c, i, n)
			}
		}
	}
	// Worker 0 (the caller) sleeps in every run: the helper finishes its region, then takes worker 0's runs
	// from the back, so worker 0 runs only the first few of its 50 items.
	var mu sync.Mutex
	by := map[int][]int{}
	parallelRuns(2, 100, 1, func(w, lo, _ int) {
		if w == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		mu.Lock()
		by[w] = append(by[w], lo)
		mu.Unlock()
	})
	if len(by[0])+len(by[1]) != 100 {
		t.Fatalf("%d + %d runs, want 100", len(by[0]), len(by[1]))
	}
	if len(by[1]) < 75 {
		t.Errorf("the helper ran %d of 100 items beside a caller that sleeps 2 ms an item, want most", len(by[1]))
	}
	for w, runs := range by {
		// A worker's runs from its own region rise one by one; stolen ones come after them and fall.
		i := 1
		for i < len(runs) && runs[i] == runs[i-1]+1 {
			i++
		}
		for ; i+1 < len(runs); i++ {
			if runs[i+1] >= runs[i] {
				t.Errorf("worker %d: runs %v: not its own in order, then stolen ones from the back", w, runs)
				break
			}
		}
	}
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
