package serving

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
)

// queuedAcquire starts acquire on its own goroutine and returns once the request waits in the queue (want
// waiting in all): the order of the calls is then the order of the queue.
func queuedAcquire(t *testing.T, ctx context.Context, l *limiter, account string, rows int, kv int64, want int) <-chan acquired {
	t.Helper()
	ch := make(chan acquired, 1)
	go func() {
		rel, err := l.acquire(ctx, account, rows, kv)
		ch <- acquired{account, rel, err}
	}()
	waitFor(t, func() bool { return l.queueLen() == want })
	return ch
}

type acquired struct {
	account string
	release func()
	err     error
}

// waitFor polls cond until it holds: the limiter's state changes on other goroutines.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func mustAcquire(t *testing.T, l *limiter, account string, rows int, kv int64) func() {
	t.Helper()
	rel, err := l.acquire(context.Background(), account, rows, kv)
	if err != nil {
		t.Fatalf("acquire for %s: %v", account, err)
	}
	return rel
}

// TestLimiterAloneTakesTheWholeBatch: an account alone is not held to its cap, so one client's group of
// rollouts fills the batch.
func TestLimiterAloneTakesTheWholeBatch(t *testing.T) {
	t.Parallel()
	l := newLimiter(4, 1, 0, 10, time.Minute)
	for range 4 {
		mustAcquire(t, l, "a", 1, 0)
	}
	if n, c := l.load(); n != 4 || c != 4 {
		t.Fatalf("load = %d/%d, want 4/4", n, c)
	}
}

// TestLimiterFairBetweenAccounts: under a flood from two accounts, freed rows alternate between them,
// whatever the order they queued in.
func TestLimiterFairBetweenAccounts(t *testing.T) {
	t.Parallel()
	l := newLimiter(2, 1, 0, 100, time.Minute)
	held := []func(){mustAcquire(t, l, "a", 1, 0), mustAcquire(t, l, "a", 1, 0)}
	var chans []<-chan acquired
	for i := range 6 { // a's flood queues first
		chans = append(chans, queuedAcquire(t, context.Background(), l, "a", 1, 0, i+1))
	}
	for i := range 6 {
		chans = append(chans, queuedAcquire(t, context.Background(), l, "b", 1, 0, 7+i))
	}
	results := make(chan acquired, len(chans))
	for _, ch := range chans {
		go func() { results <- <-ch }()
	}
	var order []string
	for len(order) < len(chans) {
		held[0]()
		held = held[1:]
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		order = append(order, r.account)
		held = append(held, r.release)
	}
	// The first freed row goes to b (a holds its cap while b waits), then they take turns; b's queue ends
	// first and a's remaining waiters take the rest.
	want := "babababababa"
	if got := join(order); got != want {
		t.Fatalf("admission order %s, want %s", got, want)
	}
}

func join(xs []string) string {
	s := ""
	for _, x := range xs {
		s += x
	}
	return s
}

// TestLimiterRefusesPastTheQueue: a full queue and a wait past the bound are 429s with the hosted
// service's message; a request that gives up leaves the queue and takes no room later.
func TestLimiterRefusesPastTheQueue(t *testing.T) {
	t.Parallel()
	l := newLimiter(1, 1, 0, 1, time.Hour)
	release := mustAcquire(t, l, "a", 1, 0)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := queuedAcquire(t, ctx, l, "a", 1, 0, 1)
	_, err := l.acquire(context.Background(), "b", 1, 0)
	if trainyard.ErrorCode(err) != trainyard.ELIMIT || trainyard.ErrorMessage(err) != ConcurrencyLimitMessage {
		t.Fatalf("past a full queue: %v, want ELIMIT %q", err, ConcurrencyLimitMessage)
	}
	cancel() // the client went away
	if r := <-waiting; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", r.err)
	}
	if l.queueLen() != 0 {
		t.Fatalf("a cancelled waiter stays queued")
	}
	release()
	release() // a second release is a no-op
	if n, _ := l.load(); n != 0 {
		t.Fatalf("after release: %d rows in flight, want 0 (the cancelled waiter took room)", n)
	}

	short := newLimiter(1, 1, 0, 10, time.Millisecond)
	mustAcquire(t, short, "a", 1, 0)
	if _, err := short.acquire(context.Background(), "a", 1, 0); trainyard.ErrorCode(err) != trainyard.ELIMIT {
		t.Fatalf("past the wait bound: %v, want ELIMIT", err)
	}
	if short.queueLen() != 0 {
		t.Fatalf("a waiter past its bound stays queued")
	}
}

// TestLimiterKVBudget: admission waits for KV-cache room rather than exceed the budget; a generation
// larger than the whole budget runs alone.
func TestLimiterKVBudget(t *testing.T) {
	t.Parallel()
	l := newLimiter(100, 100, 100, 10, time.Minute)
	first := mustAcquire(t, l, "a", 1, 60)
	second := queuedAcquire(t, context.Background(), l, "a", 1, 60, 1)
	first()
	r := <-second
	if r.err != nil {
		t.Fatal(r.err)
	}
	huge := queuedAcquire(t, context.Background(), l, "b", 1, 500, 1)
	r.release()
	if r := <-huge; r.err != nil {
		t.Fatalf("a generation over the whole budget: %v", r.err)
	} else {
		small := queuedAcquire(t, context.Background(), l, "c", 1, 1, 1) // nothing fits beside it
		r.release()
		if s := <-small; s.err != nil {
			t.Fatal(s.err)
		}
	}
}

// TestLimiterRowsOfChoices: a request with n choices takes n rows.
func TestLimiterRowsOfChoices(t *testing.T) {
	t.Parallel()
	l := newLimiter(8, 8, 0, 10, time.Minute)
	mustAcquire(t, l, "a", 6, 0)
	w := queuedAcquire(t, context.Background(), l, "a", 4, 0, 1)
	mustAcquire(t, l, "b", 2, 0) // fits beside the 6 although the 4 waits
	if n, _ := l.load(); n != 8 {
		t.Fatalf("load %d, want 8", n)
	}
	select {
	case r := <-w:
		t.Fatalf("admitted past the cap: %v", r.err)
	default:
	}
}
