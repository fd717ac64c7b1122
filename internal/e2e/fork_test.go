package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
)

// sftJob submits an SFT job on model over an uploaded file, shuffled with a
// fixed seed, so the same call on two models trains the same steps.
func (s *stack) sftJob(model string, url any, epochs int) string {
	s.t.Helper()
	return s.mustCall("POST", "/v1/preview/sft-training-jobs", map[string]any{
		"model_id": model, "training_data_url": url,
		"config":              map[string]any{"batch_size": 1, "learning_rate": 1e-3},
		"experimental_config": map[string]any{"num_epochs": epochs, "shuffle": true, "seed": 7},
	})["id"].(string)
}

// logprobs samples model greedily with logprobs and returns the choice's
// logprobs content (tokens, logprobs and top logprobs).
func (s *stack) logprobs(model string) []any {
	s.t.Helper()
	resp := s.mustCall("POST", "/v1/chat/completions", map[string]any{
		"model": model, "messages": []any{map[string]any{"role": "user", "content": "3+5"}},
		"temperature": 0, "max_tokens": 6, "logprobs": true, "top_logprobs": 3,
	})
	return resp["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
}

// losses lists the loss of every gradient_step of a job, in order.
func losses(evs []event) []float64 {
	var out []float64
	for _, e := range evs {
		if e.Type == "gradient_step" {
			out = append(out, e.Data["loss"].(float64))
		}
	}
	return out
}

// TestForkServesAndTrainsLikeItsSource: POST /v1/preview/models with
// from_checkpoint makes a model whose step 0 is a copy of the source
// checkpoint. Served at :step0 it gives exactly the source step's logprobs
// (greedy, through chat completions); its first job writes step 1 and, as
// the optimizer state was copied too, the same job trained on the source
// and on the fork writes the same adapter and optimizer state, with the
// same loss at every step. Another account cannot fork it.
func TestForkServesAndTrainsLikeItsSource(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	src := s.createModel("source")
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=fork-data", sftJSONL(6))
	if job := s.waitJob(s.sftJob(src, up["url"], 2), 2*time.Minute); job["status"] != "COMPLETED" {
		t.Fatalf("warm-up job = %v", job)
	}
	fork := s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": "fork", "base_model": baseModel,
		"from_checkpoint": "wandb-artifact:///e2e/e2e/source:step1"})["id"].(string)
	if steps := fmt.Sprint(s.checkpointSteps(fork)); steps != "[0]" {
		t.Fatalf("the fork's checkpoints = %s", steps)
	}
	srcLP, forkLP := s.logprobs("wandb-artifact:///e2e/e2e/source:step1"), s.logprobs("wandb-artifact:///e2e/e2e/fork:step0")
	if !reflect.DeepEqual(srcLP, forkLP) || len(srcLP) == 0 {
		t.Fatalf("logprobs differ:\nsource step 1: %v\nfork step 0:   %v", srcLP, forkLP)
	}
	if reflect.DeepEqual(srcLP, s.logprobs(baseModel)) {
		t.Fatal("the source's step 1 answers like the base model: the test proves nothing")
	}

	// The same job on both: the fork continues exactly as the source.
	onSrc, onFork := s.sftJob(src, up["url"], 2), s.sftJob(fork, up["url"], 2)
	for _, id := range []string{onSrc, onFork} {
		if job := s.waitJob(id, 2*time.Minute); job["status"] != "COMPLETED" {
			t.Fatalf("job = %v", job)
		}
	}
	if job := s.mustCall("GET", "/v1/preview/training-jobs/"+onFork, nil); job["checkpoint_step"] != float64(1) {
		t.Fatalf("the fork's first job wrote step %v, want 1", job["checkpoint_step"])
	}
	if a, b := losses(s.events(onSrc)), losses(s.events(onFork)); !reflect.DeepEqual(a, b) || len(a) != 12 {
		t.Fatalf("losses differ:\nsource: %v\nfork:   %v", a, b)
	}
	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.OptimizerStateFile} {
		if !bytes.Equal(s.checkpointFile(src, 2, name), s.checkpointFile(fork, 1, name)) {
			t.Fatalf("%s: the fork's step 1 differs from the source's step 2", name)
		}
	}

	// Another account's checkpoint is not found, whether it exists or not.
	other := s.asNewAccount("intruder")
	status, out := other.call("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": "stolen", "base_model": baseModel,
		"from_checkpoint": "wandb-artifact:///e2e/e2e/source:step1"})
	if status != http.StatusNotFound {
		t.Fatalf("forking another account's checkpoint: %d %v", status, out)
	}
}
