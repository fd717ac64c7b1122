package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

// BenchmarkStepOverhead measures the orchestration time of an SFT job
// outside the engine's compute, from the stored events' timestamps:
// overhead-ms/step is the steady state between consecutive gradient_step
// events minus the later step's compute; fixed-ms/job is the rest of the
// time from training_started to training_ended (dispatching the first Train
// activity, loading the state, storing the checkpoint, Complete). "chunked"
// is the default (a Train activity runs many steps; a step costs its event,
// the progress update and, every few seconds, a state save);
// "activity-per-step" forces a Temporal activity round trip and a state
// save for every step, the worst case.
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
			var perStep, fixed, compute time.Duration
			jobs := 0
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
				ev := page.Items
				var c, steady time.Duration
				for k := 1; k <= steps; k++ {
					c += stepCompute(ev[k].Data)
					if k >= 2 {
						steady += ev[k].CreatedAt.Sub(ev[k-1].CreatedAt) - stepCompute(ev[k].Data)
					}
				}
				wall := ev[steps+1].CreatedAt.Sub(ev[0].CreatedAt)
				perStep += steady
				fixed += wall - c - steady
				compute += c
				jobs++
				b.StartTimer()
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(perStep)/float64(jobs*(steps-1)), "overhead-ms/step")
			b.ReportMetric(ms(fixed)/float64(jobs), "fixed-ms/job")
			b.ReportMetric(ms(compute)/float64(jobs*steps), "compute-ms/step")
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

// BenchmarkCancelLag measures how long a running SFT job takes to end
// CANCELLED after POST .../cancel, with the default Train chunk (the
// activity learns of the cancellation from a heartbeat's answer, not at a
// chunk boundary).
func BenchmarkCancelLag(b *testing.B) {
	s := newStack(b, stackOptions{})
	s.startWorker()
	var lag time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		id := s.longSFT(s.createModel(fmt.Sprintf("cancel-lag-%d", i)), 20, 10)
		s.waitEvents(id, 3, time.Minute)
		b.StartTimer()
		start := time.Now()
		s.mustCall("POST", "/v1/preview/training-jobs/"+id+"/cancel", nil)
		if job := s.waitJob(id, time.Minute); job["status"] != "CANCELLED" {
			b.Fatalf("job = %v", job)
		}
		lag += time.Since(start)
	}
	b.ReportMetric(float64(lag.Milliseconds())/float64(b.N), "cancel-ms/op")
}

// BenchmarkPauseResumeLag measures pausing and resuming a running SFT job
// of tiny steps through the API: pause-ms/op from POST .../pause to the job
// stored as PAUSED (what GET then answers: the step in progress ends, Train
// sees the request within PauseCheckInterval, stores its state and returns,
// the Pause activity records it); resume-ms/op from POST .../resume to the
// next gradient_step stored; resume-answer-ms/op to the resume's answer
// (RUNNING recorded).
func BenchmarkPauseResumeLag(b *testing.B) {
	s := newStack(b, stackOptions{})
	s.startWorker()
	id := s.longSFT(s.createModel("pause-lag"), 20, 100) // 2,000 steps
	s.waitEvents(id, 3, time.Minute)
	ctx := context.Background()
	base := "/v1/preview/training-jobs/" + id
	var pause, resume, answer time.Duration
	for b.Loop() {
		start := time.Now()
		s.mustCall("POST", base+"/pause", nil)
		for {
			job, err := s.db.GetJob(ctx, id)
			if err != nil || job.Status.Terminal() {
				b.Fatalf("job %v: %v", job, err)
			}
			if job.Status == trainyard.JobPaused {
				break
			}
			time.Sleep(time.Millisecond)
		}
		pause += time.Since(start)
		before, err := s.db.CountEvents(ctx, id, trainyard.EventGradientStep)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		s.mustCall("POST", base+"/resume", nil)
		answer += time.Since(start)
		for {
			n, err := s.db.CountEvents(ctx, id, trainyard.EventGradientStep)
			if err != nil {
				b.Fatal(err)
			}
			if n > before {
				break
			}
			time.Sleep(time.Millisecond)
		}
		resume += time.Since(start)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(pause), "pause-ms/op")
	b.ReportMetric(ms(resume), "resume-ms/op")
	b.ReportMetric(ms(answer), "resume-answer-ms/op")
	s.mustCall("POST", base+"/cancel", nil)
}

// BenchmarkEventStreamLag measures the delivery lag of Server-Sent Events:
// for every event of an SFT job followed with GET .../events?stream=true
// from its start, the time it reached the client minus the time it was
// stored (created_at). The stream polls every DefaultEventPoll (200 ms),
// which bounds the lag from above.
func BenchmarkEventStreamLag(b *testing.B) {
	s := newStack(b, stackOptions{})
	s.startWorker()
	model := s.createModel("sse-lag")
	var lags []time.Duration
	for b.Loop() {
		id := s.longSFT(model, 10, 5) // 50 steps
		got := s.followStream(b, id)
		page, err := s.db.ListEvents(context.Background(), id, trainyard.ListOptions{Limit: trainyard.MaxPageLimit})
		if err != nil || len(page.Items) != len(got) {
			b.Fatalf("%d events stored, %d streamed (%v)", len(page.Items), len(got), err)
		}
		for _, e := range page.Items {
			lags = append(lags, got[e.ID].Sub(e.CreatedAt))
		}
		s.waitJob(id, time.Minute)
	}
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(float64(len(lags))/float64(b.N), "events/op")
}

// followStream reads a job's event stream from its start to its end and
// returns when each event id arrived.
func (s *stack) followStream(b *testing.B, jobID string) map[string]time.Time {
	req, err := http.NewRequest("GET", s.srv.URL+"/v1/preview/training-jobs/"+jobID+"/events?stream=true", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	got := map[string]time.Time{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			got[id] = time.Now()
		}
	}
	return got
}
