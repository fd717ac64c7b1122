package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

func TestWorkerRegistryLeases(t *testing.T) {
	t.Parallel()
	db, ctx := pgtest.New(t), context.Background()
	a := &trainyard.WorkerProcess{TaskQueue: "q", BaseModels: []string{"trainyard/tiny-chat"}}
	b := &trainyard.WorkerProcess{TaskQueue: "q", BaseModels: []string{"acme/llama", "trainyard/tiny-chat"}}
	other := &trainyard.WorkerProcess{TaskQueue: "other", BaseModels: []string{"acme/llama"}}
	for _, w := range []*trainyard.WorkerProcess{a, other} {
		if err := db.HeartbeatWorker(ctx, w, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.HeartbeatWorker(ctx, b, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.StartedAt.IsZero() || !a.Live {
		t.Fatalf("registered %+v", a)
	}
	started := a.StartedAt
	if err := db.HeartbeatWorker(ctx, a, time.Minute); err != nil || !a.StartedAt.Equal(started) {
		t.Fatalf("second heartbeat: %v, started_at %v → %v", err, started, a.StartedAt)
	}
	time.Sleep(100 * time.Millisecond) // b's lease runs out
	ws, err := db.ListWorkers(ctx, "q")
	if err != nil || len(ws) != 2 {
		t.Fatalf("list(q) = %v, %v", ws, err)
	}
	byID := map[string]*trainyard.WorkerProcess{ws[0].ID: ws[0], ws[1].ID: ws[1]}
	if w := byID[a.ID]; w == nil || !w.Live || !w.Holds("trainyard/tiny-chat") || w.Holds("acme/llama") {
		t.Fatalf("a = %+v", w)
	}
	if w := byID[b.ID]; w == nil || w.Live || !w.Holds("acme/llama") {
		t.Fatalf("b = %+v, want expired", w)
	}
	if n, err := db.PruneWorkers(ctx, 0); err != nil || n != 1 {
		t.Fatalf("prune(0) = %d, %v", n, err)
	}
	if err := db.DeregisterWorker(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if ws, err := db.ListWorkers(ctx, "q"); err != nil || len(ws) != 0 {
		t.Fatalf("after deregister: %v, %v", ws, err)
	}
	if ws, err := db.ListWorkers(ctx, "other"); err != nil || len(ws) != 1 {
		t.Fatalf("list(other) = %v, %v", ws, err)
	}
}
