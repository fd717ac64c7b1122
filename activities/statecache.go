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
// leaves a half-updated state behind. Besides the jobs' entries it keeps,
// per model, the state of the last checkpoint a job of this worker wrote
// (see checkpointKey).
type stateCache struct {
	mu      sync.Mutex
	max     int
	order   []string
	entries map[string]cachedState
}

type cachedState struct {
	baseStep, done int
	st             *trainState
	writer         string // for a checkpoint's entry: the job that wrote it
}

// checkpointKey is the entry of the newest checkpoint a job of this worker
// wrote on the model: the state its next job starts from. ART's loop is one
// job per iteration, each from the checkpoint the previous one wrote, and
// reading that back cost 0.7 s of every iteration.
func checkpointKey(modelID string) string { return "checkpoint/" + modelID }

// putCheckpoint keeps st, the last state of job writer, as the model's
// checkpoint at step.
func (c *stateCache) putCheckpoint(modelID string, step int, writer string, st *trainState) {
	c.putEntry(checkpointKey(modelID), cachedState{baseStep: step, st: st, writer: writer})
}

// takeCheckpoint removes and returns the model's checkpoint state at step
// with the job that wrote it, or nil.
func (c *stateCache) takeCheckpoint(modelID string, step int) (*trainState, string) {
	e, ok := c.takeEntry(checkpointKey(modelID), step)
	if !ok {
		return nil, ""
	}
	return e.st, e.writer
}

// take removes and returns the job's state after done steps from baseStep,
// or nil.
func (c *stateCache) take(jobID string, baseStep, done int) *trainState {
	e, ok := c.takeEntry(jobID, baseStep)
	if !ok || e.done != done {
		return nil
	}
	return e.st
}

// takeLatest removes and returns the job's state from baseStep whatever
// its step, with that step; nil when there is none.
func (c *stateCache) takeLatest(jobID string, baseStep int) (*trainState, int) {
	e, ok := c.takeEntry(jobID, baseStep)
	if !ok {
		return nil, 0
	}
	return e.st, e.done
}

// takeEntry removes key's entry and returns it when it is from baseStep. A
// mismatched entry goes too: the job (or model) moved on elsewhere.
func (c *stateCache) takeEntry(key string, baseStep int) (cachedState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	c.drop(key)
	return e, ok && e.baseStep == baseStep
}

// put keeps st as the job's state after done steps, evicting the oldest
// entry past max (a worker keeps the jobs of its training slots, plus one).
func (c *stateCache) put(jobID string, baseStep, done int, st *trainState) {
	c.putEntry(jobID, cachedState{baseStep: baseStep, done: done, st: st})
}

func (c *stateCache) putEntry(key string, e cachedState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cachedState{}
	}
	c.drop(key)
	c.entries[key] = e
	c.order = append(c.order, key)
	for len(c.order) > max(c.max, 1) {
		c.drop(c.order[0])
	}
	telemetry.StateCached.Set(float64(len(c.entries)))
}

// drop forgets the entry (the caller holds mu).
func (c *stateCache) drop(key string) {
	if _, ok := c.entries[key]; !ok {
		return
	}
	delete(c.entries, key)
	for i, id := range c.order {
		if id == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	telemetry.StateCached.Set(float64(len(c.entries)))
}
