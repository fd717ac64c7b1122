package activities

import (
	"sync"

	"github.com/trainyard/trainyard/internal/telemetry"
)

// stateCache keeps, per job, the training state a Train activity of this
// worker ended with, so the job's next chunk, sent to this worker's own
// task queue, continues from memory instead of reading the state back from
// the object store. An entry is valid for exactly one (base step, steps
// done): any other resume point (the job moved to another worker and back,
// a reset) reads the stored state. Entries are taken, not copied: the
// trainer updates the state in place, so a chunk that fails half-way never
// leaves a half-updated state behind.
type stateCache struct {
	mu      sync.Mutex
	max     int
	order   []string
	entries map[string]cachedState
}

type cachedState struct {
	baseStep, done int
	st             *trainState
}

// take removes and returns the job's state after done steps from baseStep,
// or nil.
func (c *stateCache) take(jobID string, baseStep, done int) *trainState {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[jobID]
	c.drop(jobID)
	if !ok || e.baseStep != baseStep || e.done != done {
		return nil
	}
	return e.st
}

// takeLatest removes and returns the job's state from baseStep whatever
// its step, with that step; nil when there is none.
func (c *stateCache) takeLatest(jobID string, baseStep int) (*trainState, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[jobID]
	c.drop(jobID)
	if !ok || e.baseStep != baseStep {
		return nil, 0
	}
	return e.st, e.done
}

// put keeps st as the job's state after done steps, evicting the oldest
// entry past max (a worker keeps the jobs of its training slots, plus one).
func (c *stateCache) put(jobID string, baseStep, done int, st *trainState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cachedState{}
	}
	c.drop(jobID)
	c.entries[jobID] = cachedState{baseStep: baseStep, done: done, st: st}
	c.order = append(c.order, jobID)
	for len(c.order) > max(c.max, 1) {
		c.drop(c.order[0])
	}
	telemetry.StateCached.Set(float64(len(c.entries)))
}

// drop forgets the job (the caller holds mu).
func (c *stateCache) drop(jobID string) {
	if _, ok := c.entries[jobID]; !ok {
		return
	}
	delete(c.entries, jobID)
	for i, id := range c.order {
		if id == jobID {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	telemetry.StateCached.Set(float64(len(c.entries)))
}
