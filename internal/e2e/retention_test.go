package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// logReward logs one validation trajectory with reward at the model's
// current step, which merges val/reward into that checkpoint's metrics.
func (s *stack) logReward(model string, reward float64) {
	s.t.Helper()
	s.mustCall("POST", "/v1/preview/models/"+model+"/log", map[string]any{"split": "val", "trajectory_groups": []any{
		map[string]any{"trajectories": []any{map[string]any{"reward": reward, "messages_and_choices": []any{
			map[string]any{"role": "user", "content": "1+2"}, map[string]any{"role": "assistant", "content": "3"}}}}}}})
}

// TestRetentionKeepsWhatMatters: a model created with a checkpoint policy
// (keep the last one and the best by val/reward, ART's
// delete_checkpoints) has it applied after every job, as a step of the job's
// workflow: the checkpoints it does not keep go, rows and S3 objects, while
// the newest, the best, one being served (sampled through chat completions
// a moment ago) and one another model was forked from stay. A policy set
// later through PUT .../checkpoint-policy applies at once.
func TestRetentionKeepsWhatMatters(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.startWorker()
	model := s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": "kept", "base_model": baseModel,
		"checkpoint_policy": map[string]any{"keep_last": 1, "keep_best_by": map[string]any{"metric": "val/reward", "direction": "max"}},
	})["id"].(string)
	up := s.mustCall("POST", "/v1/preview/files?project=e2e&name=retention-data", sftJSONL(2))
	train := func() string {
		id := s.sftJob(model, up["url"], 1)
		if job := s.waitJob(id, 2*time.Minute); job["status"] != "COMPLETED" {
			t.Fatalf("job = %v", job)
		}
		s.waitWorkflowClosed(id, time.Minute) // retention is its workflow's last step
		return id
	}
	train()
	s.logReward(model, 0.9) // step 1: the best
	train()
	s.logReward(model, 0.1)
	s.logprobs("wandb-artifact:///e2e/e2e/kept:step2") // step 2: being served
	train()
	s.mustCall("POST", "/v1/preview/models", map[string]any{"project": "e2e", "name": "kept-fork", "base_model": baseModel,
		"from_checkpoint": "wandb-artifact:///e2e/e2e/kept:step3"}) // step 3: a fork's source
	train()
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1 2 3 4]" {
		t.Fatalf("after 4 jobs: checkpoints %s, want all (1 best, 2 served, 3 forked, 4 newest)", got)
	}
	last := train()
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[1 2 3 5]" {
		t.Fatalf("after 5 jobs: checkpoints %s, want step 4 gone", got)
	}
	stored, err := s.blobs.CheckpointSteps(context.Background(), model)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(stored) != "[1 2 3 5]" {
		t.Fatalf("S3 holds checkpoint objects of steps %v", stored)
	}
	if !s.historyHas(last, "ApplyRetention") {
		t.Fatal("the job's workflow has no ApplyRetention step")
	}

	res := s.mustCall("PUT", "/v1/preview/models/"+model+"/checkpoint-policy", map[string]any{"keep_last": 1})
	if fmt.Sprint(res["deleted_steps"]) != "[1]" {
		t.Fatalf("PUT keep_last 1 deleted %v, want [1] (2 is served, 3 forked, 5 newest)", res["deleted_steps"])
	}
	if got := fmt.Sprint(s.checkpointSteps(model)); got != "[2 3 5]" {
		t.Fatalf("after PUT: checkpoints %s", got)
	}
	s.noAlarms()
}

// historyHas reports whether the job's workflow ran an activity of type name.
func (s *stack) historyHas(jobID, name string) bool {
	s.t.Helper()
	it := s.tc.GetWorkflowHistory(context.Background(), "training-job-"+jobID, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == name {
			return true
		}
	}
	return false
}
