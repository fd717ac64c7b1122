package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/testutil/enginetest"
	"github.com/trainyard/trainyard/jobspec"
)

// sampledGroups samples groups of completions from the base model and
// rewards them by how many times they contain 'a', the way a client of the
// chat completions route would build a training job: every Choice carries
// its token ids ("token_id:<id>") and sampling logprobs. The last group's
// rewards are all equal (no signal). trainable counts the sequences a step
// should train: every trajectory whose reward differs from its group's mean
// (a zero advantage carries no signal), plus its additional history.
func sampledGroups(t *testing.T, groups, perGroup int) (input []byte, trainable int) {
	t.Helper()
	ctx := context.Background()
	base := testModel(t)
	var out []map[string]any
	for g := range groups {
		msgs := []engine.Message{{Role: "user", Content: []string{"Say something.", "Tell me a word."}[g%2]}}
		prompt, err := base.RenderPrompt(msgs, nil)
		must(t, err)
		comps, err := base.Sample(ctx, nil, prompt, engine.SampleParams{Temperature: 1, Seed: int64(g), MaxTokens: 24, N: perGroup}, nil)
		must(t, err)
		var trajs []map[string]any
		for _, c := range comps {
			reward := float64(strings.Count(c.Text, "a"))
			if g == groups-1 {
				reward = 1
			}
			traj := map[string]any{
				"messages_and_choices": []any{
					map[string]any{"role": "user", "content": msgs[0].Content},
					enginetest.Choice(c),
				},
				"reward": reward,
			}
			if len(trajs) == 0 {
				// An additional history is trained with the same reward.
				traj["additional_histories"] = []any{map[string]any{"messages_and_choices": []any{
					map[string]any{"role": "user", "content": "Again."},
					map[string]any{"finish_reason": "stop", "index": 0, "message": map[string]any{"role": "assistant", "content": "again"}},
				}}}
			}
			trajs = append(trajs, traj)
		}
		// Make sure the group has signal: the first completion gets a bonus.
		if g < groups-1 {
			trajs[0]["reward"] = trajs[0]["reward"].(float64) + 3
		}
		var sum float64
		for _, traj := range trajs {
			sum += traj["reward"].(float64)
		}
		for _, traj := range trajs {
			if traj["reward"].(float64) != sum/float64(len(trajs)) {
				extra, _ := traj["additional_histories"].([]any)
				trainable += 1 + len(extra)
			}
		}
		out = append(out, map[string]any{"trajectories": trajs})
	}
	input, err := json.Marshal(map[string]any{"trajectory_groups": out})
	must(t, err)
	return input, trainable
}

func TestRLJobsAdvanceTheStepCounter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	input, trainable := sampledGroups(t, 3, 4)
	cfg := jobspec.JobConfig{ExperimentalConfig: json.RawMessage(`{"learning_rate": 5e-3, "loss_fn": "cispo"}`)}

	runJob := func(wantBase int) (*trainyard.Job, TrainResult) {
		return f.runRLJob(t, cfg, input, trainable, wantBase)
	}

	job1, r1 := runJob(0)
	if got := strings.Join(eventTypes(f.events(t, job1.ID)), " "); got != "training_started@1 gradient_step@2 training_ended@3" {
		t.Fatalf("events = %s", got)
	}
	for _, k := range []string{"loss", "policy_loss", "grad_norm", "reward", "reward_std_dev", "num_trajectories", "num_trainable_groups", "learning_rate"} {
		if _, ok := r1.Metrics[k]; !ok {
			t.Fatalf("gradient step metrics lack %q: %v", k, r1.Metrics)
		}
	}
	if r1.Metrics["num_trajectories"] != 12 || r1.Metrics["num_trainable_groups"] != 2 {
		t.Fatalf("metrics = %v", r1.Metrics)
	}
	ckpt, err := f.db.FindCheckpoint(context.Background(), f.model.ID, 1)
	must(t, err)
	if _, ok := ckpt.Metrics["train/reward"]; !ok {
		t.Fatalf("checkpoint metrics = %v, want train/reward", ckpt.Metrics)
	}

	// The step moved probability towards the rewarded completions.
	p, err := f.acts.loadPlan(context.Background(), job1.ID)
	must(t, err)
	var better []engine.Sequence
	for _, s := range p.Samples {
		if s.Advantage > 0 {
			better = append(better, s.Sequence)
		}
	}
	after1 := f.loadAdapter(t, f.model, 1)
	if before, after := enginetest.NLL(t, testModel(t), nil, better), enginetest.NLL(t, testModel(t), after1, better); !(after < before) {
		t.Fatalf("NLL of positive-advantage completions: before %.4f, after %.4f", before, after)
	}

	// The next job starts from checkpoint 1 and writes checkpoint 2, with
	// different weights.
	runJob(1)
	w1 := f.checkpointFile(t, f.model, 1, trainyard.AdapterWeightsFile)
	w2 := f.checkpointFile(t, f.model, 2, trainyard.AdapterWeightsFile)
	if bytes.Equal(w1, w2) {
		t.Fatal("checkpoint 2 has the weights of checkpoint 1")
	}
}

// runRLJob runs an RL job on f.model through WaitTurn, Prepare, Train and
// Complete, as its workflow would, checking that it starts from checkpoint
// wantBase and trains on trainable examples in one step.
func (f *fixture) runRLJob(t *testing.T, cfg jobspec.JobConfig, input []byte, trainable, wantBase int) (*trainyard.Job, TrainResult) {
	t.Helper()
	job := f.newJob(t, f.model, trainyard.JobKindRL, cfg, input)
	var turn WaitTurnResult
	must(t, f.run(t, f.acts.WaitTurn, WaitTurnInput{JobID: job.ID}, &turn))
	if turn.BaseStep != wantBase {
		t.Fatalf("base step %d, want %d", turn.BaseStep, wantBase)
	}
	var prep PrepareResult
	must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindRL, BaseStep: turn.BaseStep}, &prep))
	// The two groups with signal, less any trajectory at its group's
	// mean, plus the first trajectories' additional histories.
	if prep.TotalSteps != 1 || prep.NumExamples != trainable {
		t.Fatalf("Prepare = %+v, want %d examples", prep, trainable)
	}
	var r TrainResult
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: job.ID, BaseStep: turn.BaseStep, TotalSteps: 1}, &r))
	must(t, f.run(t, f.acts.Complete, CompleteInput{JobID: job.ID, CheckpointStep: turn.BaseStep + 1, TotalSteps: 1, Metrics: r.Metrics}, nil))
	return job, r
}

// TestNextJobStartsFromTheCheckpointInMemory checks that a job that starts
// from the checkpoint the worker's previous job wrote takes that job's
// state from memory (ART's loop: a job per iteration) and that it is the
// stored checkpoint, byte for byte; a checkpoint row naming another job
// sends it back to the store.
func TestNextJobStartsFromTheCheckpointInMemory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	ctx := context.Background()
	input, trainable := sampledGroups(t, 3, 4)
	cfg := jobspec.JobConfig{ExperimentalConfig: json.RawMessage(`{"learning_rate": 5e-3, "loss_fn": "cispo"}`)}
	job1, _ := f.runRLJob(t, cfg, input, trainable, 0)

	st, writer := f.acts.states.takeCheckpoint(f.model.ID, 1)
	if st == nil || writer != job1.ID {
		t.Fatalf("the worker kept checkpoint 1 as written by %q, want job %s", writer, job1.ID)
	}
	files, err := encodeState(st)
	must(t, err)
	for _, file := range files {
		if !bytes.Equal(file.data, f.checkpointFile(t, f.model, 1, file.name)) {
			t.Fatalf("%s in memory differs from the stored checkpoint's", file.name)
		}
	}
	f.acts.states.putCheckpoint(f.model.ID, 1, writer, st)

	before := f.acts.loaded.Load()
	f.runRLJob(t, cfg, input, trainable, 1)
	if read := f.acts.loaded.Load() - before; read != 0 {
		t.Fatalf("the job after it read %d bytes of state from the store", read)
	}
	if bytes.Equal(f.checkpointFile(t, f.model, 1, trainyard.AdapterWeightsFile), f.checkpointFile(t, f.model, 2, trainyard.AdapterWeightsFile)) {
		t.Fatal("checkpoint 2 has the weights of checkpoint 1")
	}

	// An entry whose writer the checkpoint row does not name is not used,
	// nor one of another step.
	job3 := f.newJob(t, f.model, trainyard.JobKindRL, cfg, input)
	st2, _ := f.acts.states.takeCheckpoint(f.model.ID, 2)
	if st2 == nil {
		t.Fatal("the worker did not keep checkpoint 2")
	}
	f.acts.states.putCheckpoint(f.model.ID, 2, job1.ID, st2)
	if f.acts.cachedState(ctx, job3, 2, 0) != nil {
		t.Fatal("a checkpoint the row says another job wrote was taken from memory")
	}
	f.acts.states.putCheckpoint(f.model.ID, 2, job1.ID, st2)
	if f.acts.cachedState(ctx, job3, 1, 0) != nil {
		t.Fatal("checkpoint 2's state served a job starting from checkpoint 1")
	}
}

func TestPrepareRLRejectsUnusableInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	cases := map[string]string{
		`{"trajectory_groups": []}`: "trajectory_groups is empty",
		`{"trajectory_groups": [{"trajectories": [{"messages_and_choices": [{"role": "robot", "content": "x"}], "reward": 1}, {"messages_and_choices": [], "reward": 0}]}]}`: "trajectory_groups[0].trajectories[0]: messages_and_choices[0]: role \"robot\"",
		// Finite rewards whose spread overflows: before, the job failed only
		// when its gradient_step event could not be stored.
		hugeRewards(1e308, -1e308): "reward_std_dev is +Inf: rewards or metrics are too large to average",
		hugeRewards(1e308, 1e308):  "too large to average",
	}
	for input, want := range cases {
		job := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, []byte(input))
		err := f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindRL}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
	}
}

// hugeRewards is a group of two trainable trajectories with rewards r1, r2.
func hugeRewards(r1, r2 float64) string {
	traj := func(r float64) map[string]any {
		return map[string]any{"reward": r, "messages_and_choices": []any{
			map[string]any{"role": "user", "content": "a"},
			map[string]any{"finish_reason": "stop", "index": 0, "message": map[string]any{"role": "assistant", "content": "b"}},
		}}
	}
	b, _ := json.Marshal(map[string]any{"trajectory_groups": []any{map[string]any{"trajectories": []any{traj(r1), traj(r2)}}}})
	return string(b)
}
