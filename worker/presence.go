package worker

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// leaseBeats is how many heartbeat intervals a worker's row stays live
// after its last heartbeat: two may be lost without the worker dropping out.
const leaseBeats = 3

// pruneAge is how long after its lease ran out a dead worker's row is kept
// (for operators reading the table) before a starting worker deletes it.
const pruneAge = time.Hour

// presence keeps a worker's row of the worker registry current while the
// worker runs.
type presence struct {
	registry trainyard.WorkerRegistry
	interval time.Duration
	log      *zap.Logger
	row      trainyard.WorkerProcess

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// register prunes long-dead rows and writes the first heartbeat.
func (p *presence) register(ctx context.Context) error {
	if n, err := p.registry.PruneWorkers(ctx, pruneAge); err != nil {
		p.log.Warn("prune the worker registry", zap.Error(err))
	} else if n > 0 {
		p.log.Info("pruned dead workers", zap.Int("rows", n))
	}
	return p.registry.HeartbeatWorker(ctx, &p.row, leaseBeats*p.interval)
}

// start renews the row every interval until stop. A failed heartbeat is
// logged; the next one tries again.
func (p *presence) start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			bctx, cancel := context.WithTimeout(ctx, p.interval)
			err := p.registry.HeartbeatWorker(bctx, &p.row, leaseBeats*p.interval)
			cancel()
			if err != nil && ctx.Err() == nil {
				p.log.Warn("worker registry heartbeat failed", zap.Error(err))
			}
		}
	}()
}

// stop ends the heartbeats and deletes the row.
func (p *presence) stop() {
	if p.cancel != nil {
		p.cancel()
		p.done.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.registry.DeregisterWorker(ctx, p.row.ID); err != nil {
		p.log.Warn("leave the worker registry (the row expires by itself)", zap.Error(err))
	}
}
