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
	s.checkGaplessSeqs(id)
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

// TestPauseAndCancelSpreadJob: a job whose steps are spread over two workers
// pauses at a step boundary (training_paused right after a gradient_step,
// nothing trained while PAUSED), resumes at the next step and completes with
// every step once, each on two workers, its losses those of the same job
// left alone up to float summation order; another is cancelled between two
// steps and ends CANCELLED with training_failed last.
func TestPauseAndCancelSpreadJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{Workflow: workflows.Options{MaxWorkers: 2}, Registry: true})
	s.startWorker()
	s.startWorker()
	s.waitHolders(baseModel, 2)
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=dp-pause", sftJSONL(16))
	job := func(model string) string {
		return s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
			"model_id": model, "training_data_url": up["url"],
			"config":              map[string]any{"batch_size": 4, "learning_rate": 1e-3},
			"experimental_config": map[string]any{"num_epochs": 6, "shuffle": true, "seed": 7},
		})["id"].(string)
	}
	src := s.createModel("dp-pause-source")
	if j := s.waitJob(job(src), 2*time.Minute); j["status"] != "COMPLETED" {
		t.Fatalf("warm-up job = %v", j)
	}
	fork := func(name string) string {
		return s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": name, "base_model": baseModel,
			"from_checkpoint": "wandb-artifact:///e2e/e2e/dp-pause-source:step1"})["id"].(string)
	}
	const steps = 24 // 16 conversations, batches of 4, 6 epochs
	straight := s.waitJob(job(fork("dp-straight")), 3*time.Minute)
	if straight["status"] != "COMPLETED" {
		t.Fatalf("job left alone = %v", straight)
	}
	want := losses(s.events(straight["id"].(string)))

	id := job(fork("dp-paused"))
	base := "/v1/preview/training-jobs/" + id
	s.waitEvents(id, 1+2, 2*time.Minute)
	s.mustCall("POST", base+"/pause", nil)
	paused := s.waitStatus(id, "PAUSED", time.Minute)
	at := paused["current_step"].(float64)
	evs := s.events(id)
	if last := evs[len(evs)-1]; last.Type != "training_paused" || last.Data["step"] != at || len(losses(evs)) != int(at) {
		t.Fatalf("paused at step %v; events end with %v", at, types(evs[max(0, len(evs)-3):]))
	}
	if at >= steps {
		t.Fatal("the job finished before it was paused; make it longer")
	}
	time.Sleep(300 * time.Millisecond) // a paused job trains nothing
	if n := len(s.events(id)); n != len(evs) {
		t.Fatalf("%d events while PAUSED, %d when it paused", n, len(evs))
	}
	if r := s.mustCall("POST", base+"/resume", nil); r["status"] != "RUNNING" {
		t.Fatalf("resume answered %v", r)
	}
	done := s.waitJob(id, 3*time.Minute)
	if done["status"] != "COMPLETED" || done["current_step"] != float64(steps) || done["workers"] != float64(2) {
		t.Fatalf("resumed job = %v", done)
	}
	evs = s.events(id)
	got := losses(evs)
	if len(evs) != steps+4 || len(got) != steps {
		t.Fatalf("%d events with %d gradient steps, want %d and %d: %v", len(evs), len(got), steps+4, steps, types(evs))
	}
	for i := range want {
		if math.Abs(want[i]-got[i]) > 1e-4*math.Max(1, math.Abs(want[i])) {
			t.Errorf("step %d: loss %v left alone, %v paused", i+1, want[i], got[i])
		}
	}
	spread := 0
	for _, e := range evs {
		if e.Type == "gradient_step" && e.Data["num_workers"] == float64(2) {
			spread++
		}
	}
	if spread == 0 {
		t.Fatal("no step of the paused job was spread over the two workers")
	}

	long := job(fork("dp-cancelled"))
	s.waitEvents(long, 1+2, 2*time.Minute)
	s.mustCall("POST", "/v1/preview/training-jobs/"+long+"/cancel", nil)
	if j := s.waitJob(long, time.Minute); j["status"] != "CANCELLED" {
		t.Fatalf("cancelled job = %v", j)
	}
	evs = s.events(long)
	if last := evs[len(evs)-1]; last.Type != "training_failed" || len(losses(evs)) >= steps {
		t.Fatalf("events of the cancelled job: %v", types(evs))
	}
}
