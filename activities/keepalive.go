package activities

import (
	"context"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
)

// keepAlive heartbeats from a background goroutine while an activity does
// long work that cannot heartbeat itself (a download, one long gradient
// step). The heartbeat carries the latest details set with progress, so a
// retry resumes from what is durable. Heartbeating is also how the activity
// learns of cancellation: the SDK cancels ctx when the workflow asks.
type keepAlive struct {
	saved atomic.Int64
	// shown is what the heartbeats say besides Saved, for whoever reads
	// the pending activity in the Temporal UI.
	shown atomic.Pointer[heartbeat]
	stop  chan struct{}
	done  chan struct{}
}

// startKeepAlive starts heartbeating every interval with details of saved.
func startKeepAlive(ctx context.Context, interval time.Duration, saved int) *keepAlive {
	k := &keepAlive{stop: make(chan struct{}), done: make(chan struct{})}
	k.saved.Store(int64(saved))
	activity.RecordHeartbeat(ctx, heartbeat{Saved: saved})
	go func() {
		defer close(k.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, k.details())
			}
		}
	}()
	return k
}

// progress records that the state after saved steps is durable, and
// heartbeats it at once.
func (k *keepAlive) progress(ctx context.Context, saved int) {
	k.saved.Store(int64(saved))
	activity.RecordHeartbeat(ctx, k.details())
}

// show sets what the next heartbeats tell about the work in progress: the
// step reached, of how many, and the last loss.
func (k *keepAlive) show(step, total int, loss float64) {
	k.shown.Store(&heartbeat{Step: step, TotalSteps: total, Loss: &loss})
}

// details is the heartbeat to record now.
func (k *keepAlive) details() heartbeat {
	hb := heartbeat{}
	if s := k.shown.Load(); s != nil {
		hb = *s
	}
	hb.Saved = int(k.saved.Load())
	return hb
}

// close stops the heartbeats.
func (k *keepAlive) close() {
	close(k.stop)
	<-k.done
}
