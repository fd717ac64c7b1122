package activities

import (
	"context"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// BenchmarkRecordStep measures the bookkeeping a Train activity does after
// a gradient step: the gradient_step event (a transaction that locks the
// job row) alone, and with the job's progress update (done at most once a
// second and at the end of an activity).
func BenchmarkRecordStep(b *testing.B) {
	for _, progress := range []bool{false, true} {
		b.Run(map[bool]string{false: "event", true: "event+progress"}[progress], func(b *testing.B) {
			benchmarkRecordStep(b, progress)
		})
	}
}

func benchmarkRecordStep(b *testing.B, progress bool) {
	f := newFixture(b, Config{}, nil)
	job := f.newJob(b, f.model, trainyard.JobKindSFT, jobspec.JobConfig{}, nil)
	metrics := map[string]float64{"loss": 1.5, "grad_norm": 0.3, "learning_rate": 1e-4, "num_tokens": 512,
		"num_trainable_tokens": 100, "tokens_per_second": 4000}
	ctx := context.Background()
	done := 0
	for b.Loop() {
		done++
		if err := f.acts.recordStep(ctx, job.ID, "run", done, 0, metrics, progress); err != nil {
			b.Fatal(err)
		}
	}
}
