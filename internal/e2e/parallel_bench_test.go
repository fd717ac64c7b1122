package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
	"github.com/trainyard/trainyard/workflows"
)

// shape135M is SmolLM2-135M's body (576 wide, 30 layers, 9/3 heads, FFN
// 1536) on Qwen3's architecture and tokenizer (vocabulary 151,936), the
// shape the rollout and loop benchmarks use, with random weights.
var shape135M = model.Config{Arch: "qwen3", QKNorm: true, VocabSize: hfsnapshot.Qwen3Vocab, Dim: 576, Layers: 30, Heads: 9,
	KVHeads: 3, HeadDim: 64, Hidden: 1536, MaxSeqLen: 8192, RopeTheta: 100000, NormEps: 1e-5, TiedEmbeddings: true}

// BenchmarkDataParallelStep runs an SFT job of 3 steps of 8 conversations
// (about 1,100 tokens a step) at the 135M shape on 1 and on 2 worker
// processes, each pinned to its own CPU with GOMAXPROCS=1, jobs allowed 2
// workers, and reports the time of a step (from the first step's event to
// the last's, so loading the base model is left out), the bytes exchanged
// through the object store per step (exchanged-B/step: gradients written and
// read, training state stored and read by the other shards; 0 on one
// worker) and the tokens trained per second. The speed-up is the ratio of
// the two s/step figures.
//
//	make bench-parallel
//	go test ./internal/e2e -run '^$' -bench DataParallelStep -benchtime 1x
func BenchmarkDataParallelStep(b *testing.B) {
	const name = "bench/smollm2-135m-qwen3"
	dir := filepath.Join(b.TempDir(), "snapshot")
	hfsnapshot.WriteQwen3Snapshot(b, dir, shape135M, 1)
	const steps, batch = 3, 32
	data := longConversations(steps*batch, 7)
	// TRAINYARD_BENCH_WORKERS_FIRST=1 (as root) runs the workers at a higher
	// priority than the Temporal server, S3 gateway and PostgreSQL, which
	// share these CPUs here but would have machines of their own.
	first := os.Getenv("TRAINYARD_BENCH_WORKERS_FIRST") == "1"
	if first && os.Geteuid() != 0 {
		b.Fatal("TRAINYARD_BENCH_WORKERS_FIRST=1 needs root (nice -n -10)")
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := newStack(b, stackOptions{Workflow: workflows.Options{MaxWorkers: 2}, Registry: true,
				Bases: map[string]string{name: dir}})
			for cpu := range workers {
				s.startWorkerProcessOn(cpu, first)
			}
			s.waitHolders(name, workers)
			up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=dp-bench", data)
			var perStep time.Duration
			var exchanged, tokens float64
			n := 0
			for i := 0; b.Loop(); i++ {
				m := s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": fmt.Sprintf("dp-%d", i), "base_model": name})
				id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
					"model_id": m["id"], "training_data_url": up["url"],
					"config": map[string]any{"batch_size": batch, "learning_rate": 1e-4},
				})["id"].(string)
				if job := s.waitJob(id, 30*time.Minute); job["status"] != "COMPLETED" {
					b.Fatalf("job = %v", job)
				}
				stored, err := s.db.ListEvents(context.Background(), id, trainyard.ListOptions{Limit: 100})
				if err != nil {
					b.Fatal(err)
				}
				var first, last time.Time
				for _, e := range stored.Items {
					if e.Type != trainyard.EventGradientStep {
						continue
					}
					if first.IsZero() {
						first = e.CreatedAt
					} else {
						exchanged += num(e.Data["exchanged_bytes"])
						tokens += num(e.Data["num_tokens"])
						if w := num(e.Data["num_workers"]); workers > 1 && w != float64(workers) {
							b.Fatalf("a step ran on %v workers, want %d", w, workers)
						}
					}
					last = e.CreatedAt
				}
				perStep += last.Sub(first) / (steps - 1)
				n++
			}
			b.ReportMetric(perStep.Seconds()/float64(n), "s/step")
			b.ReportMetric(exchanged/float64(n*(steps-1)), "exchanged-B/step")
			b.ReportMetric(tokens/(perStep.Seconds()*(steps-1)), "tokens/s")
		})
	}
}

// num reads a JSON number of an event's data (0 when absent).
func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// waitHolders waits until n live workers of the stack's queue hold base.
func (s *stack) waitHolders(base string, n int) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ws, err := s.db.ListWorkers(context.Background(), s.queue)
		if err != nil {
			s.t.Fatal(err)
		}
		live := 0
		for _, w := range ws {
			if w.Live && w.Holds(base) {
				live++
			}
		}
		if live >= n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d live workers hold %s after two minutes, want %d", live, base, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// longConversations returns n SFT conversations of about 140 tokens each:
// a question and an answer of random words.
func longConversations(n int, seed int64) []byte {
	words := strings.Fields("the model learns a step of training from every batch of words that it reads again " +
		"while workers share gradients through storage and one update moves the adapter toward lower loss")
	rng := rand.New(rand.NewSource(seed))
	text := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = words[rng.Intn(len(words))]
		}
		return strings.Join(out, " ")
	}
	var buf bytes.Buffer
	for range n {
		js, _ := json.Marshal(map[string]any{"messages": []map[string]any{
			{"role": "user", "content": text(40)}, {"role": "assistant", "content": text(90)}}})
		buf.Write(js)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}
