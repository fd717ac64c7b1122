package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// BenchmarkStateReload runs SFT jobs of 40 steps in 200 ms Train chunks
// (about a dozen chunks a job) with 1 and with 3 in-process workers, each
// with its own state cache, and reports the bytes of in-progress training
// state read back from the object store per gradient step (reloaded-B/step),
// next to the bytes stored per step (stored-B/step: what every chunk read
// back before chunks stayed on their worker) and the share of chunks that
// continued from memory (cache-hits/chunk).
//
//	go test ./internal/e2e -run '^$' -bench StateReload -benchtime 3x
func BenchmarkStateReload(b *testing.B) {
	for _, workers := range []int{1, 3} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := newStack(b, stackOptions{Activities: activities.Config{ChunkDuration: 200 * time.Millisecond}})
			for range workers {
				s.startWorker()
			}
			const steps = 40
			up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=bench", sftJSONL(steps))
			reloaded := telemetry.StateBytesLoaded.WithLabelValues("job_state")
			r0, s0, h0 := value(reloaded), value(telemetry.StateBytes), value(telemetry.StateCacheHits)
			jobs := 0
			for i := 0; b.Loop(); i++ {
				model := s.createModel(fmt.Sprintf("bench-%d", i))
				id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
					"model_id": model, "training_data_url": up["url"],
					"config": map[string]any{"batch_size": 1, "learning_rate": 1e-4},
				})["id"].(string)
				if job := s.waitJob(id, 5*time.Minute); job["status"] != "COMPLETED" {
					b.Fatalf("job = %v", job)
				}
				jobs++
			}
			n := float64(jobs * steps)
			stored := value(telemetry.StateBytes) - s0
			hits := value(telemetry.StateCacheHits) - h0
			b.ReportMetric((value(reloaded)-r0)/n, "reloaded-B/step")
			b.ReportMetric(stored/n, "stored-B/step")
			b.ReportMetric(hits/float64(jobs), "cache-hits/job")
		})
	}
}

// value reads a counter of this process's registry.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
