package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestSampleTrainServe is the loop a client runs: sample completions of
// the model through /v1/chat/completions, paste the returned Choices into
// trajectories with rewards, train one RL step, and sample the trained
// checkpoint, whose logprobs differ from the base model's.
func TestSampleTrainServe(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	modelID := s.createModel("loop")
	name := "wandb-artifact:///e2e/e2e/loop"
	var groups []any
	for g, prompt := range []string{"Say something nice.", "Name an animal."} {
		msgs := []any{map[string]any{"role": "user", "content": prompt}}
		resp := s.mustCall("POST", "/v1/chat/completions", map[string]any{
			"model": name, "messages": msgs, "n": 4, "temperature": 1, "max_tokens": 16, "seed": g, "logprobs": true,
		})
		var trajs []any
		for i, c := range resp["choices"].([]any) {
			text, _ := c.(map[string]any)["message"].(map[string]any)["content"].(string)
			trajs = append(trajs, map[string]any{
				"messages_and_choices": append(append([]any{}, msgs...), c),
				"reward":               float64(strings.Count(text, "e")) + float64(i)/10,
			})
		}
		groups = append(groups, map[string]any{"trajectories": trajs})
	}
	id := s.mustCall("POST", "/v1/preview/training-jobs", map[string]any{
		"model_id": modelID, "trajectory_groups": groups, "experimental_config": map[string]any{"learning_rate": 5e-3},
	})["id"].(string)
	if job := s.waitJob(id, 2*time.Minute); job["status"] != "COMPLETED" || job["checkpoint_step"] != float64(1) {
		t.Fatalf("job = %v", job)
	}

	first := func(model string) float64 {
		resp := s.mustCall("POST", "/v1/chat/completions", map[string]any{
			"model": model, "messages": []any{map[string]any{"role": "user", "content": "Say something nice."}},
			"temperature": 0, "max_tokens": 4, "logprobs": true,
		})
		c := resp["choices"].([]any)[0].(map[string]any)
		return c["logprobs"].(map[string]any)["content"].([]any)[0].(map[string]any)["logprob"].(float64)
	}
	if base, trained := first(name+":step0"), first(name); base == trained {
		t.Fatalf("the trained model gives the first token the base model's logprob %v", base)
	}
}
