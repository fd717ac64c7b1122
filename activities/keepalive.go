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
	// since, when set, goes with every heartbeat as DownloadSince (Fetch).
	since time.Time
	stop  chan struct{}
	done  chan struct{}
}

// startKeepAlive starts heartbeating every interval with details of saved.
func startKeepAlive(ctx context.Context, interval time.Duration, saved int) *keepAlive {
	return startKeepAliveSince(ctx, interval, saved, time.Time{})
}

// startKeepAliveSince is startKeepAlive whose heartbeats also carry since
// (fetchHeartbeat) unless it is zero. The first heartbeat goes out at once,
// so since is durable from the start of the attempt.
func startKeepAliveSince(ctx context.Context, interval time.Duration, saved int, since time.Time) *keepAlive {
	k := &keepAlive{stop: make(chan struct{}), done: make(chan struct{}), since: since}
	k.saved.Store(int64(saved))
	activity.RecordHeartbeat(ctx, k.payload())
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
				activity.RecordHeartbeat(ctx, k.payload())
			}
		}
	}()
	return k
}

// progress records that the state after saved steps is durable, and
// heartbeats it at once.
func (k *keepAlive) progress(ctx context.Context, saved int) {
	k.saved.Store(int64(saved))
	activity.RecordHeartbeat(ctx, k.payload())
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

// payload is what to heartbeat now: the details, with since when set.
func (k *keepAlive) payload() any {
	if k.since.IsZero() {
		return k.details()
	}
	return fetchHeartbeat{heartbeat: k.details(), DownloadSince: k.since}
}

// close stops the heartbeats.
func (k *keepAlive) close() {
	close(k.stop)
	<-k.done
}
