package model

import (
	"context"
	"math"
	"testing"
)

// TestCachePool: a released cache's memory goes back to its pool only once no cache reads positions from it
// (a clone, and a cache that shares them through that clone), within the pool's limit, rounded to whole classes of positions; a cache
// made from recycled memory (filled with NaN first) decodes exactly as a fresh one does; a released cache
// fails loudly if used again.
func TestCachePool(t *testing.T) {
	cfg := archConfigs()["llama"]
	w := randomModel(t, cfg, 5)
	ctx := context.Background()
	pool := NewCachePool(1 << 30)
	a := w.NewPooledCache(pool, 10)
	if a.cap != min(cacheClass, cfg.MaxSeqLen) {
		t.Fatalf("capacity %d, want %d", a.cap, min(cacheClass, cfg.MaxSeqLen))
	}
	size, class := a.Bytes(), a.cap
	prompt := []int{3, 1, 4, 1, 5}
	if _, err := w.Prefill(ctx, a, prompt, nil); err != nil {
		t.Fatal(err)
	}
	b := a.Clone()
	c := w.NewPooledCache(pool, 10)
	c.SharePrefix(b, 3) // reads a's positions through b
	a.Release()
	if pool.Bytes() != 0 {
		t.Fatalf("a's memory pooled while b and c read from it (%d bytes)", pool.Bytes())
	}
	b.Release()
	if got, want := pool.Bytes(), size; got != want {
		t.Fatalf("pool holds %d bytes after b's release, want b's %d", got, want)
	}
	c.Release()
	if got, want := pool.Bytes(), 3*size; got != want {
		t.Fatalf("pool holds %d bytes after all three, want %d", got, want)
	}
	for _, s := range pool.free[class] {
		for i := range s {
			s[i] = float32(math.NaN())
		}
	}
	fresh := w.NewCache(class)
	reused := w.NewPooledCache(pool, class)
	if pool.Bytes() != 2*size {
		t.Fatalf("pool holds %d bytes after one was taken", pool.Bytes())
	}
	want, err := w.Prefill(ctx, fresh, prompt, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Prefill(ctx, reused, prompt, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeAll(t, "prefill on recycled memory", got, want)
	for _, tok := range []int{2, 7, 1} {
		want, err := w.Decode(ctx, []*Cache{fresh}, []int{tok}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.Decode(ctx, []*Cache{reused}, []int{tok}, nil)
		if err != nil {
			t.Fatal(err)
		}
		closeAll(t, "decoding on recycled memory", got, want)
	}
	reused.Release()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a released cache decoded")
			}
		}()
		_, _ = w.Decode(ctx, []*Cache{reused}, []int{1}, nil)
	}()
	small := NewCachePool(size - 1) // keeps nothing
	d := w.NewPooledCache(small, 10)
	d.Release()
	if small.Bytes() != 0 {
		t.Fatalf("a pool of %d bytes keeps %d", size-1, small.Bytes())
	}
}
