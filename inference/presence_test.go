package inference

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

func TestPresenceRegistersBeatsDrainsAndLeaves(t *testing.T) {
	t.Parallel()
	db, ctx := pgtest.New(t), context.Background()
	var inFlight atomic.Int64
	p := &Presence{Registry: db, Address: "http://10.0.0.9:8080", BaseModels: []string{"m"}, Interval: 50 * time.Millisecond,
		Load: func() (int, int) { return int(inFlight.Load()), 4 }}
	if err := p.Register(ctx); err != nil {
		t.Fatal(err)
	}
	row := func() (live, draining bool, load int) {
		t.Helper()
		procs, err := db.ListInference(ctx)
		if err != nil || len(procs) > 1 {
			t.Fatalf("registry: %v, %v", procs, err)
		}
		if len(procs) == 0 {
			return false, false, -1
		}
		if procs[0].ID != p.ID() || procs[0].Address != p.Address || procs[0].Capacity != 4 {
			t.Fatalf("row %+v", procs[0])
		}
		return procs[0].Live, procs[0].Draining, procs[0].InFlight
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(rctx); close(done) }()
	inFlight.Store(3)
	waitFor(t, "the load to reach the registry", func() bool {
		live, _, load := row()
		return live && load == 3
	})
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	// A later heartbeat keeps it draining: wait for one that carries a new
	// load (Run's, not Drain's), rather than for a time that a loaded machine
	// may not keep to.
	inFlight.Store(2)
	var draining bool
	waitFor(t, "a live heartbeat after Drain", func() bool {
		var live bool
		var load int
		live, draining, load = row()
		return live && load == 2
	})
	if !draining {
		t.Fatal("a heartbeat after Drain undid it")
	}
	stop()
	<-done
	// LeaseBeats (3) intervals without a heartbeat end the lease; the row is
	// read by the clock of the database, so wait for it rather than exactly.
	waitFor(t, "the lease to end after the last heartbeat", func() bool {
		live, _, _ := row()
		return !live
	})
	if err := p.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, load := row(); load != -1 {
		t.Fatal("the row outlived Deregister")
	}
}

// waitFor polls cond until it holds, failing t after 5 s: the registry's
// rows change on heartbeats and by the database's clock, not on cue.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
	}
}
