package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/internal/testutil/enginetest"
	"github.com/trainyard/trainyard/workflows"
)

// faultOptions make a dead worker's step move on quickly: a short heartbeat
// timeout, frequent heartbeats and state saves.
var faultOptions = stackOptions{
	Workflow:   workflows.Options{HeartbeatTimeout: 3 * time.Second},
	Activities: activities.Config{HeartbeatInterval: 300 * time.Millisecond, SaveInterval: 200 * time.Millisecond, ChunkDuration: 2 * time.Second},
}

// TestWorkerKilledMidJob kills the only worker (a separate process) in the
// middle of an SFT job, starts another, and checks that the job completes
// with exactly one new checkpoint and a gap-free, duplicate-free event list.
func TestWorkerKilledMidJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, faultOptions)
	model := s.createModel("fault")
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=sums", sftJSONL(16))
	const steps = 16 // 16 conversations, batch 2, 2 epochs
	id := s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
		"model_id": model, "training_data_url": up["url"],
		"config":              map[string]any{"batch_size": 2, "learning_rate": 1e-3},
		"experimental_config": map[string]any{"num_epochs": 2},
	})["id"].(string)

	first := s.startWorkerProcess()
	evs := s.waitEvents(id, 1+3, 2*time.Minute) // started + 3 gradient steps
	first.kill(t)
	killedAt := len(evs) - 1
	t.Logf("killed the worker after %d of %d steps", killedAt, steps)
	if killedAt >= steps {
		t.Fatalf("the job finished before the worker was killed; make it longer")
	}

	s.startWorkerProcess()
	job := s.waitJob(id, 3*time.Minute)
	if job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(1) || job["current_step"] != float64(steps) {
		t.Fatalf("job = %v", job)
	}
	evs = s.events(id)
	checkEvents(t, evs, steps, "training_ended")
	s.checkGaplessSeqs(id)
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1]" {
		t.Fatalf("checkpoints = %s, want exactly [1]", got)
	}
	seqs := sftSequences(t, 16)
	if before, after := enginetest.NLL(t, base(t), nil, seqs), enginetest.NLL(t, base(t), s.adapterAt(model, 1), seqs); !(after < before) {
		t.Fatalf("NLL of the training data: base %.4f, trained %.4f", before, after)
	}
}
