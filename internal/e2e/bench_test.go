package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

// BenchmarkSubmitToFirstGradientStep measures the latency from POST
// /v1/preview/training-jobs to the job's first gradient_step event being
// stored, with a worker in the process and an idle model: the API (input to
// S3, job row, workflow start), the job gate, preparation (tokenising, the
// plan to S3) and the first step itself. train-ms/op is that step's compute
// as the engine reports it; the rest is orchestration.
func BenchmarkSubmitToFirstGradientStep(b *testing.B) {
	s := newStack(b, stackOptions{})
	s.startWorker()
	model := s.createModel("bench-latency")
	body := sampleRL(b, 2, 4, 1).body(model, 1e-4)
	ctx := context.Background()
	var compute time.Duration
	// One job first, so the model is loaded and connections are warm.
	s.waitJob(s.mustCall("POST", "/v1/preview/training-jobs", body)["id"].(string), 2*time.Minute)
	b.ResetTimer()
	for b.Loop() {
		id := s.mustCall("POST", "/v1/preview/training-jobs", body)["id"].(string)
		var step *trainyard.Event
		for step == nil {
			ev, err := s.db.LastEvent(ctx, id)
			if err == nil && ev.Seq >= 2 {
				step = ev
				break
			}
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		compute += stepCompute(step.Data)
		s.waitJob(id, 2*time.Minute)
		b.StartTimer()
	}
	b.ReportMetric(float64(compute.Milliseconds())/float64(b.N), "train-ms/op")
}

// BenchmarkStepOverhead measures the orchestration time per gradient step
// of an SFT job: the job's wall time from training_started to
// training_ended minus the engine's compute time of its steps, divided by
// the steps. "chunked" is the default (many steps per Train activity; the
// per-step cost is the gradient_step event, the progress update and the
// periodic state save); "activity-per-step" forces a Temporal activity round
// trip and a state save for every step, the worst case.
func BenchmarkStepOverhead(b *testing.B) {
	for _, c := range []struct {
		name  string
		chunk time.Duration
	}{{"chunked", 0}, {"activity-per-step", time.Nanosecond}} {
		b.Run(c.name, func(b *testing.B) {
			s := newStack(b, stackOptions{Activities: activities.Config{ChunkDuration: c.chunk}})
			s.startWorker()
			const steps = 20
			up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=bench", sftJSONL(steps))
			var overhead, compute time.Duration
			total := 0
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				model := s.createModel(fmt.Sprintf("bench-%d", i))
				id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
					"model_id": model, "training_data_url": up["url"],
					"config": map[string]any{"batch_size": 1, "learning_rate": 1e-4},
				})["id"].(string)
				s.waitJob(id, 5*time.Minute)
				b.StopTimer()
				page, err := s.db.ListEvents(context.Background(), id, trainyard.ListOptions{Limit: 100})
				if err != nil || len(page.Items) != steps+2 {
					b.Fatalf("events: %v (%d)", err, len(page.Items))
				}
				wall := page.Items[steps+1].CreatedAt.Sub(page.Items[0].CreatedAt)
				var c time.Duration
				for _, e := range page.Items[1 : steps+1] {
					c += stepCompute(e.Data)
				}
				overhead += wall - c
				compute += c
				total += steps
				b.StartTimer()
			}
			b.ReportMetric(float64(overhead.Microseconds())/1000/float64(total), "overhead-ms/step")
			b.ReportMetric(float64(compute.Microseconds())/1000/float64(total), "compute-ms/step")
		})
	}
}

// stepCompute is the engine's time for a step, from its reported token
// count and rate.
func stepCompute(data map[string]any) time.Duration {
	tokens, _ := data["num_tokens"].(float64)
	rate, _ := data["tokens_per_second"].(float64)
	if rate == 0 {
		return 0
	}
	return time.Duration(tokens / rate * float64(time.Second))
}
