package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

func TestInferenceRegistryLeases(t *testing.T) {
	t.Parallel()
	db, ctx := pgtest.New(t), context.Background()
	a := &trainyard.InferenceProcess{Address: "http://10.0.0.1:8080", BaseModels: []string{"trainyard/tiny-chat"}, Capacity: 16}
	if err := db.HeartbeatInference(ctx, a, time.Minute); err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.StartedAt.IsZero() || !a.Live {
		t.Fatalf("registered %+v", a)
	}
	b := &trainyard.InferenceProcess{Address: "http://10.0.0.2:8080", BaseModels: []string{"acme/llama", "trainyard/tiny-chat"}, Capacity: 8}
	if err := db.HeartbeatInference(ctx, b, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// A heartbeat updates load and draining in place and keeps the start.
	started := a.StartedAt
	a.InFlight, a.Draining = 3, true
	if err := db.HeartbeatInference(ctx, a, time.Minute); err != nil {
		t.Fatal(err)
	}
	if !a.StartedAt.Equal(started) {
		t.Fatalf("started_at moved from %v to %v", started, a.StartedAt)
	}
	time.Sleep(100 * time.Millisecond) // b's lease runs out
	all, err := db.ListInference(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("list = %v, %v", all, err)
	}
	byID := map[string]*trainyard.InferenceProcess{all[0].ID: all[0], all[1].ID: all[1]}
	if got := byID[a.ID]; !got.Live || got.InFlight != 3 || !got.Draining || got.Capacity != 16 || got.Address != a.Address {
		t.Fatalf("a = %+v", got)
	}
	if got := byID[b.ID]; got.Live || !slices.Equal(got.BaseModels, b.BaseModels) || !got.Holds("acme/llama") || got.Holds("x") {
		t.Fatalf("b = %+v, want expired", got)
	}
	// Pruning keeps recently expired rows (they still name their models)
	// and removes long expired ones.
	if n, err := db.PruneInference(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("prune(1h) = %d, %v", n, err)
	}
	if n, err := db.PruneInference(ctx, 0); err != nil || n != 1 {
		t.Fatalf("prune(0) = %d, %v", n, err)
	}
	if err := db.DeregisterInference(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.DeregisterInference(ctx, a.ID); err != nil {
		t.Fatalf("second deregister: %v", err)
	}
	if all, err := db.ListInference(ctx); err != nil || len(all) != 0 {
		t.Fatalf("after deregister: %v, %v", all, err)
	}
}
