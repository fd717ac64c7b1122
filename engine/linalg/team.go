package linalg

import (
	"runtime"
	"sync/atomic"
)

// Team lends its owner a second core for a burst of short products: one goroutine that spins, waiting for
// work, from NewTeam until Close. Decoding one sequence makes about two hundred matrix-vector products per
// token, tens of microseconds each; handing half of each to a goroutine parked between them costs about as
// much as the half itself (waking its thread takes ~11 µs on the 2-core VM, BenchmarkHandoff), so they ran
// on one core, at one core's memory bandwidth. A spinning partner takes its half within nanoseconds. A
// Team is for one goroutine's use at a time, for the length of one decoding step.
type Team struct {
	work atomic.Pointer[teamWork]
	stop atomic.Bool
	done chan struct{}
}

// teamWork is one product split into count items.
type teamWork struct {
	fn       func(i int)
	count    int64
	next     atomic.Int64
	joined   atomic.Bool // the partner claims items only after setting this
	finished atomic.Bool // the partner ran every item it claimed
}

// NewTeam starts a Team's partner goroutine, or returns nil (a valid, partnerless Team) when GOMAXPROCS is 1.
func NewTeam() *Team {
	if runtime.GOMAXPROCS(0) < 2 {
		return nil
	}
	t := &Team{done: make(chan struct{})}
	go t.partner()
	return t
}

// Close stops the partner and waits for it. It is a no-op on a nil Team.
func (t *Team) Close() {
	if t == nil {
		return
	}
	t.stop.Store(true)
	<-t.done
}

func (t *Team) partner() {
	defer close(t.done)
	var last *teamWork
	for spins := 0; !t.stop.Load(); spins++ {
		w := t.work.Load()
		if w == nil || w == last {
			if spins%1024 == 1023 {
				runtime.Gosched() // let anything else this P should run have it
			}
			continue
		}
		last = w
		w.joined.Store(true)
		for i := w.next.Add(1) - 1; i < w.count; i = w.next.Add(1) - 1 {
			w.fn(int(i))
		}
		w.finished.Store(true)
	}
}

// run calls fn(i) for every i in [0, count), on the caller and the partner, and returns when all are done.
// Items are claimed through an atomic counter, so the result does not depend on who ran which.
func (t *Team) run(count int, fn func(i int)) {
	if t == nil {
		for i := range count {
			fn(i)
		}
		return
	}
	w := &teamWork{fn: fn, count: int64(count)}
	t.work.Store(w)
	for i := w.next.Add(1) - 1; i < w.count; i = w.next.Add(1) - 1 {
		fn(int(i))
	}
	// Every item is claimed. A partner that claimed one set joined before its claim, so it is seen here;
	// one that joins later finds nothing left to run.
	if w.joined.Load() {
		for spins := 0; !w.finished.Load(); spins++ {
			if spins%1024 == 1023 {
				runtime.Gosched()
			}
		}
	}
}

// GemvBF16T sets y = alpha·x·Bᵀ + beta·y for one row x of k values and B stored n × k in bfloat16 (ldb
// apart), splitting B's rows between the caller and t's partner.
func GemvBF16T(t *Team, n, k int, alpha float32, x []float32, b []uint16, ldb int, beta float32, y []float32) {
	if n == 0 {
		return
	}
	if ldb < max(k, 1) || len(b) < (n-1)*ldb+k || len(x) < k || len(y) < n {
		panic("linalg.GemvBF16T: operand too short for its shape")
	}
	const chunk = 32
	x = x[:k]
	t.run((n+chunk-1)/chunk, func(ch int) {
		rowsDotBF16(b, ldb, x, ch*chunk, min(chunk, n-ch*chunk), alpha, beta, y)
	})
}
