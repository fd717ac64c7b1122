package serving

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type sized int64

func sizeOfSized(v sized) int64 { return int64(v) }

func TestLRUCacheEvictsLeastRecentlyUsedByBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newLRUCache[string, sized](100, sizeOfSized)
	loads := map[string]int{}
	get := func(k string, size sized) bool {
		_, hit, err := c.get(ctx, k, func(context.Context) (sized, error) { loads[k]++; return size, nil })
		if err != nil {
			t.Fatal(err)
		}
		return hit
	}
	get("a", 40)
	get("b", 40)
	if !get("a", 40) { // a is now the most recent
		t.Fatal("a should be cached")
	}
	get("c", 40) // 120 bytes: b, the least recent, goes
	if n, bytes := c.stats(); n != 2 || bytes != 80 {
		t.Fatalf("stats = %d entries, %d bytes; want 2, 80", n, bytes)
	}
	if get("b", 40) || loads["b"] != 2 {
		t.Fatalf("b should have been evicted and reloaded (loads %v)", loads)
	}
	get("huge", 500) // larger than the budget: served, not kept
	if get("huge", 500) || loads["huge"] != 2 {
		t.Fatalf("an oversized value must not be cached (loads %v)", loads)
	}
}

func TestLRUCacheLoadsConcurrentMissesOnce(t *testing.T) {
	t.Parallel()
	c := newLRUCache[string, sized](100, sizeOfSized)
	var loads atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := c.get(context.Background(), "k", func(context.Context) (sized, error) {
				loads.Add(1)
				<-release
				return 7, nil
			})
			if err != nil || v != 7 {
				t.Errorf("get = %v, %v", v, err)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // let every goroutine reach the flight
	close(release)
	wg.Wait()
	if loads.Load() != 1 {
		t.Fatalf("%d loads, want 1", loads.Load())
	}
}

func TestLRUCacheWaiterCancellationDoesNotFailTheLoad(t *testing.T) {
	t.Parallel()
	c := newLRUCache[string, sized](100, sizeOfSized)
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	load := func(lctx context.Context) (sized, error) {
		<-release
		return 3, lctx.Err() // the load's context must outlive the impatient caller
	}
	done := make(chan error)
	go func() { _, _, err := c.get(ctx, "k", load); done <- err }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter got %v", err)
	}
	close(release)
	v, _, err := c.get(context.Background(), "k", load)
	if err != nil || v != 3 {
		t.Fatalf("second get = %v, %v", v, err)
	}
}

func TestLRUCacheDoesNotKeepFailedLoads(t *testing.T) {
	t.Parallel()
	c := newLRUCache[string, sized](100, sizeOfSized)
	boom := errors.New("boom")
	if _, _, err := c.get(context.Background(), "k", func(context.Context) (sized, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	v, hit, err := c.get(context.Background(), "k", func(context.Context) (sized, error) { return 5, nil })
	if err != nil || hit || v != 5 {
		t.Fatalf("after a failure: %v %v %v; want a fresh load", v, hit, err)
	}
}

// stats returns the number of cached values and their total size.
func (c *lruCache[K, V]) stats() (n int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}
