package serving

import (
	"sync"

	"github.com/trainyard/trainyard"
)

// ConcurrencyLimitMessage is the hosted service's answer past its concurrency cap; clients match on it.
const ConcurrencyLimitMessage = "Concurrency limit reached for requests"

// limiter admits generations up to a global cap and a per-account cap, without queueing: past either cap
// the request is refused at once (429), as the hosted service does, so a client backs off instead of piling
// up work on a CPU that is already busy.
type limiter struct {
	global, perAccount int

	mu        sync.Mutex
	total     int
	byAccount map[string]int
}

func newLimiter(global, perAccount int) *limiter {
	return &limiter{global: global, perAccount: perAccount, byAccount: map[string]int{}}
}

// acquire takes a slot for account or returns ELIMIT. The returned release must be called exactly once.
func (l *limiter) acquire(account string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.global || l.byAccount[account] >= l.perAccount {
		return nil, trainyard.Errorf(trainyard.ELIMIT, ConcurrencyLimitMessage)
	}
	l.total++
	l.byAccount[account]++
	var once sync.Once
	return func() { once.Do(func() { l.release(account) }) }, nil
}

// load returns the generations in flight and the global cap.
func (l *limiter) load() (inFlight, capacity int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.global
}

func (l *limiter) release(account string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byAccount[account]--; l.byAccount[account] == 0 {
		delete(l.byAccount, account)
	}
}
