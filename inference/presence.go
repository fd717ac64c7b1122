package inference

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// DefaultHeartbeat is how often a process renews its registry row when
// Presence.Interval is zero.
const DefaultHeartbeat = 2 * time.Second

// LeaseBeats is how many heartbeat intervals a row stays live after its last
// heartbeat: two heartbeats may be lost (a slow statement, a brief database
// hiccup) without the process dropping out, and a process that died or hangs
// stops getting new work after at most three intervals.
const LeaseBeats = 3

// pruneAge is how long after its lease ran out a dead process's row is kept:
// meanwhile its base models still count as known, so a request for them is a
// retryable 503 rather than a 404.
const pruneAge = time.Hour

// Presence keeps one inference process's row of the registry current:
// Register writes it, Run renews it every Interval with the process's load,
// Drain marks it draining and Deregister deletes it.
type Presence struct {
	// Registry stores the row.
	Registry trainyard.InferenceRegistry
	// Address is the base URL the API reaches this process at.
	Address string
	// BaseModels are the base models it serves.
	BaseModels []string
	// Load reports generations in flight and the most admitted at once.
	Load func() (inFlight, capacity int)
	// Interval between heartbeats; zero means DefaultHeartbeat.
	Interval time.Duration
	// Log receives heartbeat failures; nil is a no-op logger.
	Log *zap.Logger

	beatMu sync.Mutex // one heartbeat at a time, so a late one never undoes Drain
	mu     sync.Mutex
	proc   trainyard.InferenceProcess
}

func (p *Presence) interval() time.Duration {
	if p.Interval <= 0 {
		return DefaultHeartbeat
	}
	return p.Interval
}

// Register prunes long-dead rows and writes this process's first heartbeat.
func (p *Presence) Register(ctx context.Context) error {
	if p.Log == nil {
		p.Log = zap.NewNop()
	}
	if n, err := p.Registry.PruneInference(ctx, pruneAge); err != nil {
		p.Log.Warn("prune the inference registry", zap.Error(err))
	} else if n > 0 {
		p.Log.Info("pruned dead inference processes", zap.Int("rows", n))
	}
	p.mu.Lock()
	p.proc.Address, p.proc.BaseModels = p.Address, p.BaseModels
	p.mu.Unlock()
	return p.beat(ctx)
}

// ID is the process's registry id (after Register).
func (p *Presence) ID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc.ID
}

// Run renews the row every Interval until ctx is done. A failed heartbeat is
// logged and the next one tries again: the process goes on serving what it
// is sent, and if the database stays out of reach its lease runs out and
// routers stop sending.
func (p *Presence) Run(ctx context.Context) {
	t := time.NewTicker(p.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Each bounded by one interval, so a slow database never stacks them up.
		bctx, cancel := context.WithTimeout(ctx, p.interval())
		err := p.beat(bctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			p.Log.Warn("inference heartbeat failed", zap.String("process", p.ID()), zap.Error(err))
		}
	}
}

// Drain marks the process draining at once: routers stop picking it on their
// next refresh while its calls in flight finish.
func (p *Presence) Drain(ctx context.Context) error {
	p.mu.Lock()
	p.proc.Draining = true
	p.mu.Unlock()
	return p.beat(ctx)
}

// Deregister deletes the row (clean shutdown, after the calls in flight
// ended).
func (p *Presence) Deregister(ctx context.Context) error {
	if err := p.Registry.DeregisterInference(ctx, p.ID()); err != nil {
		return fmt.Errorf("deregister inference process: %w", err)
	}
	return nil
}

// beat writes one heartbeat within ctx. Only Run bounds its beats by an
// interval: Register's and Drain's each happen once and must land, and a first
// statement on a cold connection pool can take longer than an interval (a
// 50 ms one in tests on a loaded machine failed Register with "context
// deadline exceeded"), so their callers bound them.
func (p *Presence) beat(ctx context.Context) error {
	p.beatMu.Lock()
	defer p.beatMu.Unlock()
	p.mu.Lock()
	proc := p.proc
	p.mu.Unlock()
	proc.InFlight, proc.Capacity = p.Load()
	if err := p.Registry.HeartbeatInference(ctx, &proc, LeaseBeats*p.interval()); err != nil {
		return fmt.Errorf("inference heartbeat: %w", err)
	}
	p.mu.Lock()
	p.proc.ID = proc.ID // set by the first heartbeat
	p.mu.Unlock()
	return nil
}
