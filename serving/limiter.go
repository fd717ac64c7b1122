package serving

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/trainyard/trainyard"
)

// ConcurrencyLimitMessage is the hosted service's answer past its concurrency cap; clients match on it.
const ConcurrencyLimitMessage = "Concurrency limit reached for requests"

// limiter admits generations into the decoding batches: up to a number of rows (one per completion, the
// rows of a batched decoding step) and a number of KV-cache bytes across all accounts. Past either, a
// request waits in a queue instead of being refused, so a client that sends its whole group of rollouts at
// once gets every answer and the batches stay full. The queue is fair: each account has its own FIFO, and
// freed room goes round-robin to the accounts that wait. An account's rows are capped at perAccount only
// while another account waits for room, so one account alone gets the whole batch, and two accounts under a
// flood split it. A request is refused (429, ELIMIT) only when the queue is full or it has waited maxWait.
type limiter struct {
	rows, perAccount int   // caps in decoding rows
	kvBytes          int64 // cap on the KV caches of the admitted generations
	maxQueue         int
	maxWait          time.Duration

	mu        sync.Mutex
	usedRows  int
	usedKV    int64
	byAccount map[string]int       // rows admitted per account
	waiting   map[string][]*waiter // per account, oldest first
	ring      []string             // accounts with waiters, in the order they are served
	queued    int
}

// waiter is one queued request. admitted is set (under the limiter's lock) before ready is closed.
type waiter struct {
	account  string
	rows     int
	kv       int64
	ready    chan struct{}
	admitted bool
}

func newLimiter(rows, perAccount int, kvBytes int64, maxQueue int, maxWait time.Duration) *limiter {
	return &limiter{rows: rows, perAccount: perAccount, kvBytes: kvBytes, maxQueue: maxQueue, maxWait: maxWait,
		byAccount: map[string]int{}, waiting: map[string][]*waiter{}}
}

// acquire admits a generation of rows decoding rows holding kv bytes of KV cache for account, waiting in
// the queue while there is no room. It returns ELIMIT when the queue is full or the wait passes maxWait,
// and ctx's error when ctx ends first (the client went away: it leaves the queue). The returned release
// must be called exactly once (more calls are no-ops).
func (l *limiter) acquire(ctx context.Context, account string, rows int, kv int64) (release func(), err error) {
	rows = max(rows, 1)
	w := &waiter{account: account, rows: rows, kv: kv, ready: make(chan struct{})}
	l.mu.Lock()
	if l.queued >= l.maxQueue {
		l.mu.Unlock()
		return nil, l.refusal("the queue of %d requests waiting for a decoding slot is full", l.maxQueue)
	}
	l.enqueue(w)
	l.dispatch()
	admitted := w.admitted
	l.mu.Unlock()

	var timeout <-chan time.Time
	if !admitted {
		t := time.NewTimer(l.maxWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.ready:
		return l.releaser(w), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = l.refusal("no decoding slot became free within %s", l.maxWait)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.admitted { // admitted while giving up: hand the room back
		l.free(w)
		l.dispatch()
		return nil, err
	}
	l.dequeue(w)
	l.dispatch() // the waiter may have been the head that held its account's turn
	return nil, err
}

func (l *limiter) refusal(format string, args ...any) error {
	return trainyard.WrapError(trainyard.ELIMIT, fmt.Errorf(format, args...), ConcurrencyLimitMessage)
}

func (l *limiter) releaser(w *waiter) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.free(w)
			l.dispatch()
		})
	}
}

func (l *limiter) enqueue(w *waiter) {
	if len(l.waiting[w.account]) == 0 {
		l.ring = append(l.ring, w.account)
	}
	l.waiting[w.account] = append(l.waiting[w.account], w)
	l.queued++
}

func (l *limiter) dequeue(w *waiter) {
	q := l.waiting[w.account]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			l.queued--
			break
		}
	}
	l.waiting[w.account] = q
	if len(q) == 0 {
		delete(l.waiting, w.account)
		for i, a := range l.ring {
			if a == w.account {
				l.ring = append(l.ring[:i:i], l.ring[i+1:]...)
				break
			}
		}
	}
}

func (l *limiter) free(w *waiter) {
	l.usedRows -= w.rows
	l.usedKV -= w.kv
	if l.byAccount[w.account] -= w.rows; l.byAccount[w.account] <= 0 {
		delete(l.byAccount, w.account)
	}
}

// dispatch admits waiters while there is room, round-robin over the accounts that wait: one head per
// account per turn. A head admitted goes to the back of the ring with its account's next waiter. Heads
// within their account's cap go first; only when none is left does an account go past its cap (no one
// else is waiting then, or the others are past theirs too), so the batch never idles while requests wait.
func (l *limiter) dispatch() {
	for l.admitRound(true) || l.admitRound(false) {
	}
}

// admitRound admits the first head, in ring order, that fits (and, when capped, is within its account's
// cap), and reports whether it admitted one.
func (l *limiter) admitRound(capped bool) bool {
	for i, a := range l.ring {
		w := l.waiting[a][0]
		if !l.fits(w) || capped && l.byAccount[a]+w.rows > l.perAccount {
			continue
		}
		l.ring = append(l.ring[:i:i], l.ring[i+1:]...)
		l.dequeueHead(a)
		l.usedRows += w.rows
		l.usedKV += w.kv
		l.byAccount[a] += w.rows
		w.admitted = true
		close(w.ready)
		return true
	}
	return false
}

func (l *limiter) dequeueHead(a string) {
	q := l.waiting[a][1:]
	l.queued--
	if len(q) == 0 {
		delete(l.waiting, a)
		return
	}
	l.waiting[a] = q
	l.ring = append(l.ring, a) // its next waiter takes its turn after the others
}

// fits says whether w's rows and KV cache fit beside what is admitted. A generation larger than a whole
// cap is admitted alone rather than never.
func (l *limiter) fits(w *waiter) bool {
	if l.usedRows == 0 {
		return true
	}
	return l.usedRows+w.rows <= l.rows && (l.kvBytes <= 0 || l.usedKV+w.kv <= l.kvBytes)
}

// load returns the rows in flight and the row cap.
func (l *limiter) load() (inFlight, capacity int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usedRows, l.rows
}

// queueLen returns the requests waiting.
func (l *limiter) queueLen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queued
}
