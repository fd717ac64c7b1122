package serving

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// ServedMarkInterval is how often one process records, per checkpoint, that
// chat completions use it. Retention keeps a checkpoint marked within its
// window (minutes), so a mark a minute old is fresh enough, and a busy
// checkpoint costs one UPDATE a minute, not one per request.
const ServedMarkInterval = time.Minute

// servedMarks records in the model store which checkpoints chat completions
// use (trainyard.ModelStore.MarkCheckpointServed), so retention never
// deletes a checkpoint that is being served, whichever process serves it.
// The mark is written when a request resolves its checkpoint, before the
// adapter is loaded.
type servedMarks struct {
	models trainyard.ModelStore
	log    *zap.Logger
	every  time.Duration

	mu   sync.Mutex
	last map[string]time.Time // checkpoint id -> when this process last marked it
}

// maxMarks bounds the marks remembered; past it the stale ones are dropped.
const maxMarks = 4096

func newServedMarks(models trainyard.ModelStore, log *zap.Logger) *servedMarks {
	return &servedMarks{models: models, log: log, every: ServedMarkInterval, last: map[string]time.Time{}}
}

// mark records that c is being served, unless this process did within the
// interval. A failed write is logged, not returned: serving goes on, and
// the request holds its adapter in memory either way.
func (m *servedMarks) mark(ctx context.Context, c *trainyard.Checkpoint) {
	now := time.Now()
	m.mu.Lock()
	if t, ok := m.last[c.ID]; ok && now.Sub(t) < m.every {
		m.mu.Unlock()
		return
	}
	if len(m.last) >= maxMarks {
		for id, t := range m.last {
			if now.Sub(t) >= m.every {
				delete(m.last, id)
			}
		}
	}
	m.last[c.ID] = now
	m.mu.Unlock()
	if err := m.models.MarkCheckpointServed(ctx, c.ID, now); err != nil {
		m.mu.Lock()
		delete(m.last, c.ID) // try again on the next request
		m.mu.Unlock()
		m.log.Warn("could not record that a checkpoint is being served", zap.String("model_id", c.ModelID),
			zap.Int("step", c.Step), zap.Error(err))
	}
}
