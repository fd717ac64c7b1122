package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/internal/devstack"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/workflows"
)

// temporalOnPostgres starts a Temporal server of the test's own that keeps
// its state in PostgreSQL (two fresh databases, dropped at the end), the
// production configuration.
func temporalOnPostgres(t *testing.T) *devstack.Stack {
	t.Helper()
	admin := os.Getenv(pgtest.EnvURL)
	if admin == "" {
		admin = pgtest.DefaultURL
	}
	pg, err := devstack.ParsePostgresURL(admin)
	if err != nil {
		t.Fatalf("%s: %v", pgtest.EnvURL, err)
	}
	pg.Database = fmt.Sprintf("trainyard_e2e_temporal_%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := devstack.Start(ctx, devstack.Config{DataDir: t.TempDir(), Postgres: &pg, FrontendAddr: "127.0.0.1:0",
		DisableUI: true, SearchAttributes: workflows.SearchAttributeTypes()})
	if err != nil {
		t.Fatalf("start Temporal on PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		st.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("drop Temporal's databases: %v", err)
			return
		}
		defer conn.Close(ctx)
		for _, db := range []string{pg.Database, pg.Database + "_visibility"} {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Logf("drop %s: %v", db, err)
			}
		}
	})
	return st
}

// TestDataParallelJobAcrossWorkerProcesses: with jobs allowed two workers,
// an SFT job whose base model two worker processes hold runs its steps as
// two gradient shards, one per process, and one update. One process is
// killed in the middle of the job; the other finishes it. The job keeps its
// invariants (one training_started, every step once and in order, one
// terminal event, one checkpoint) and ends with the checkpoint and losses of
// the same job run whole on one worker, up to float summation order.
// Temporal keeps its state in PostgreSQL, as in production.
func TestDataParallelJobAcrossWorkerProcesses(t *testing.T) {
	t.Parallel()
	opts := faultOptions
	opts.Workflow.MaxWorkers = 2
	opts.Temporal = temporalOnPostgres(t)
	opts.Registry = true
	s := newStack(t, opts)
	s.startWorkerProcess()
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=dp", sftJSONL(16))
	job := func(model string, epochs int) string {
		return s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
			"model_id": model, "training_data_url": up["url"],
			"config":              map[string]any{"batch_size": 4, "learning_rate": 1e-3},
			"experimental_config": map[string]any{"num_epochs": epochs, "shuffle": true, "seed": 7},
		})["id"].(string)
	}
	// Two forks of one checkpoint start from the same adapter.
	src := s.createModel("dp-source")
	if j := s.waitJob(job(src, 1), 2*time.Minute); j["status"] != "COMPLETED" {
		t.Fatalf("warm-up job = %v", j)
	}
	fork := func(name string) string {
		return s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": name, "base_model": baseModel,
			"from_checkpoint": "wandb-artifact:///e2e/e2e/dp-source:step1"})["id"].(string)
	}
	whole, spread := fork("dp-whole"), fork("dp-spread")

	const steps = 12 // 16 conversations, batches of 4, 3 epochs
	ref := s.waitJob(job(whole, 3), 3*time.Minute)
	if ref["status"] != "COMPLETED" || ref["workers"] != float64(1) {
		t.Fatalf("job on one worker = %v", ref)
	}
	refEvents := s.events(ref["id"].(string))
	checkEvents(t, refEvents, steps, "training_ended")

	second := s.startWorkerProcess()
	s.waitHolders(baseModel, 2)
	id := job(spread, 3)
	evs := s.waitEvents(id, 1+3, 2*time.Minute)
	second.kill(t)
	if got := evs[1].Data["num_workers"]; got != float64(2) {
		t.Fatalf("the first step ran on %v workers, want 2: %v", got, evs[1].Data)
	}
	t.Logf("killed the second worker after %d of %d steps", len(evs)-1, steps)
	if len(evs)-1 >= steps {
		t.Fatal("the job finished before the worker was killed; make it longer")
	}

	got := s.waitJob(id, 3*time.Minute)
	if got["status"] != "COMPLETED" || got["checkpoint_step"] != float64(1) || got["current_step"] != float64(steps) {
		t.Fatalf("spread job = %v", got)
	}
	evs = s.events(id)
	checkEvents(t, evs, steps, "training_ended")
	stored, err := s.db.ListEvents(context.Background(), id, trainyard.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range stored.Items {
		if e.Seq != i+1 {
			t.Fatalf("event %d has seq %d: the sequence has a gap or a duplicate", i, e.Seq)
		}
	}
	if cps := fmt.Sprint(s.checkpointSteps(spread)); cps != "[0 1]" {
		t.Fatalf("checkpoints = %s, want the fork's [0 1]", cps)
	}

	// The same steps, up to summation order: the shards' gradients are
	// summed in another order than one pass's micro-batches.
	wl, sl := losses(refEvents), losses(evs)
	for i := range wl {
		if math.Abs(wl[i]-sl[i]) > 1e-4*math.Max(1, math.Abs(wl[i])) {
			t.Errorf("step %d: loss %v on one worker, %v spread", i+1, wl[i], sl[i])
		}
	}
	a, b := adapterTensors(s.adapterAt(whole, 1)), adapterTensors(s.adapterAt(spread, 1))
	var diff, scale, moved float64
	before := adapterTensors(s.adapterAt(src, 1))
	for i := range a {
		for j := range a[i] {
			diff = math.Max(diff, math.Abs(float64(a[i][j]-b[i][j])))
			scale = math.Max(scale, math.Abs(float64(a[i][j])))
			moved = math.Max(moved, math.Abs(float64(a[i][j]-before[i][j])))
		}
	}
	t.Logf("checkpoints: max |Δ| %.3g (trained weights up to %.3g, moved up to %.3g by the job)", diff, scale, moved)
	if diff > 1e-3*moved {
		t.Fatalf("the spread job's checkpoint differs from the one-worker job's by %.3g, more than 1e-3 of what training moved (%.3g)", diff, moved)
	}
}

// adapterTensors lists an adapter's tensors in name order.
func adapterTensors(ad *engine.Adapter) [][]float32 {
	var buf bytes.Buffer
	if err := ad.WriteWeights(&buf); err != nil {
		panic(err)
	}
	f, err := safetensors.Read(&buf)
	if err != nil {
		panic(err)
	}
	names := slices.Sorted(maps.Keys(f.Tensors))
	out := make([][]float32, len(names))
	for i, n := range names {
		out[i] = f.Tensors[n].Data
	}
	return out
}
