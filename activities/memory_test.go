package activities

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/jobspec"
)

// TestPrepareRefusesAJobThatCannotFitTheMemoryLimit: under a memory limit
// below what one training step needs, Prepare fails the job at once with a
// non-retryable error naming the memory needed and the memory available;
// under a limit that fits only smaller micro-batches the job prepares and
// trains (Train cuts the micro-batches to the limit).
func TestPrepareRefusesAJobThatCannotFitTheMemoryLimit(t *testing.T) {
	t.Parallel()
	base, err := bases{}.Base(context.Background(), testBaseName)
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(f *fixture) (*trainyard.Job, PrepareResult, error) {
		cfg := jobspec.JobConfig{TrainingDataURL: f.putArtifact(t, "mem", sftData(4)),
			Config: json.RawMessage(`{"batch_size": 4, "learning_rate": 1e-3}`)}
		job := f.newJob(t, f.model, trainyard.JobKindSFT, cfg, nil)
		var prep PrepareResult
		err := f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, &prep)
		return job, prep, err
	}

	// What the job's steps need, from a run without a limit.
	free := newFixture(t, Config{}, nil)
	job, _, err := prepare(free)
	must(t, err)
	p, err := free.acts.loadPlan(context.Background(), job.ID)
	must(t, err)
	shape := p.stepShape(p.LoRA)
	one := shape
	one.Sequences = 1
	full, err := base.EstimateStepMemory(shape)
	must(t, err)
	least, err := base.EstimateStepMemory(one)
	must(t, err)
	if shape.Sequences < 2 || least.Total() >= full.Total() {
		t.Fatalf("step shape %+v: one sequence needs %d bytes, the whole step %d", shape, least.Total(), full.Total())
	}

	limit := least.Total() - 16<<20
	f := newFixture(t, Config{MemoryLimit: limit}, nil)
	_, _, err = prepare(f)
	var appErr *temporal.ApplicationError
	switch {
	case !errorsAs(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != ErrMemoryLimit:
		t.Fatalf("err = %v, want a non-retryable %s error", err, ErrMemoryLimit)
	case !strings.Contains(appErr.Message(), "needs about "+engine.FormatBytes(least.Total())),
		!strings.Contains(appErr.Message(), "only "+engine.FormatBytes(limit)+" is available"),
		!strings.Contains(appErr.Message(), "TRAINYARD_MEMORY_LIMIT"):
		t.Fatalf("message %q does not name the %s needed and the %s available", appErr.Message(),
			engine.FormatBytes(least.Total()), engine.FormatBytes(limit))
	}

	// Between one sequence's step and the whole batch's: smaller micro-batches, same training.
	f = newFixture(t, Config{MemoryLimit: (least.Total() + full.Total()) / 2}, nil)
	f.seedCheckpoint(t, f.model)
	job, prep, err := prepare(f)
	must(t, err)
	var r TrainResult
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: job.ID, BaseStep: 1, TotalSteps: prep.TotalSteps}, &r))
	if r.Done != prep.TotalSteps {
		t.Fatalf("Train = %+v, want %d steps", r, prep.TotalSteps)
	}
}
