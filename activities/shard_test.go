package activities

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/jobspec"
)

// TestShardedStepsMatchTrain: a job whose 3 steps run as 2 Gradient shards
// on two workers (two Activities, each with its own state cache) and an
// ApplyStep on the first ends with the checkpoint of the same job trained by
// one Train activity, up to float summation order, with one gradient_step
// per step saying it ran on 2 workers. The second worker catches up from the
// previous step's gradients (reading less than the stored state); given a
// wrong checksum it reads the stored state instead and stays correct. A
// repeated ApplyStep of a step already applied records nothing twice.
func TestShardedStepsMatchTrain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	data := sftData(8)
	cfg := func(name string) jobspec.JobConfig {
		return jobspec.JobConfig{TrainingDataURL: f.putArtifact(t, name, data), Config: json.RawMessage(`{"batch_size": 3, "learning_rate": 1e-3}`)}
	}
	whole, spread := f.model, f.newModel(t)
	f.seedCheckpoint(t, whole, spread)
	jobA := f.newJob(t, whole, trainyard.JobKindSFT, cfg("a"), nil)
	jobB := f.newJob(t, spread, trainyard.JobKindSFT, cfg("b"), nil)
	const steps = 3
	for _, j := range []*trainyard.Job{jobA, jobB} {
		var prep PrepareResult
		must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: j.ID, Kind: trainyard.JobKindSFT, BaseStep: 1}, &prep))
		if prep.TotalSteps != steps {
			t.Fatalf("steps = %d", prep.TotalSteps)
		}
	}
	var r TrainResult
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: jobA.ID, BaseStep: 1, TotalSteps: steps}, &r))
	if r.Done != steps {
		t.Fatalf("Train did %d of %d steps", r.Done, steps)
	}

	other, err := New(f.acts.d, Config{})
	must(t, err)
	fo := *f
	fo.acts = other
	var prev *PreviousStep
	for done := range steps {
		if done == 2 {
			bad := *prev
			bad.Checksum++ // as if the replica had drifted: it must not be used
			prev = &bad
		}
		var s0, s1 ShardResult
		in := ShardInput{JobID: jobB.ID, BaseStep: 1, Done: done, TotalSteps: steps, Shards: 2, Previous: prev}
		must(t, f.run(t, f.acts.Gradient, in, &s0))
		in.Shard = 1
		must(t, fo.run(t, other.Gradient, in, &s1))
		if s0.N != s1.N || s0.Sums.Trainable == 0 || s1.Sums.Trainable == 0 || s0.Sums.Trainable+s1.Sums.Trainable != s0.N {
			t.Fatalf("step %d: shards trained %d and %d of N = %d/%d tokens", done+1, s0.Sums.Trainable, s1.Sums.Trainable, s0.N, s1.N)
		}
		if done > 0 && s0.StateBytes != 0 { // it keeps the state it applied the step before to
			t.Errorf("step %d: the applying worker read %d bytes of state", done+1, s0.StateBytes)
		}
		switch done {
		case 1: // caught up: it read the two gradients of step 1
			if want := prev.Shards[0].Bytes + prev.Shards[1].Bytes; s1.StateBytes != want {
				t.Errorf("step 2: the other worker read %d bytes, want the previous gradients' %d", s1.StateBytes, want)
			}
		case 2: // the checksum did not match: the gradients, then the stored state
			if min := prev.Shards[0].Bytes + prev.Shards[1].Bytes + 2*s1.Bytes; s1.StateBytes < min {
				t.Errorf("step 3: the other worker read %d bytes, want the gradients and the stored state (> %d)", s1.StateBytes, min)
			}
		}
		apply := ApplyInput{JobID: jobB.ID, BaseStep: 1, Done: done, TotalSteps: steps, Shards: []ShardResult{s0, s1}}
		must(t, f.run(t, f.acts.ApplyStep, apply, &r))
		if r.Done != done+1 || r.Metrics["num_workers"] != 2 || r.Metrics["exchanged_bytes"] <= 0 || r.Checksum == 0 {
			t.Fatalf("step %d: ApplyStep = %+v", done+1, r)
		}
		prev = &PreviousStep{Done: done, Shards: apply.Shards, Checksum: r.Checksum, StateBytes: r.StateBytes}
		if done == 0 {
			var again TrainResult
			must(t, f.run(t, f.acts.ApplyStep, apply, &again))
			if again.Done != 1 {
				t.Fatalf("a repeated ApplyStep reported %d steps done", again.Done)
			}
		}
	}

	evs := f.events(t, jobB.ID)
	if got := eventTypes(evs); len(got) != 1+steps {
		t.Fatalf("events = %v, want started + %d gradient steps", got, steps)
	}
	lossA, lossB := f.events(t, jobA.ID), evs
	for i := 1; i <= steps; i++ {
		a, b := lossA[i].Data["loss"].(float64), lossB[i].Data["loss"].(float64)
		if math.Abs(a-b) > 1e-5*math.Max(1, math.Abs(a)) {
			t.Errorf("step %d: loss %v by Train, %v by shards", i, a, b)
		}
	}
	read := func(m *trainyard.Model) map[string]safetensors.Tensor {
		file, err := safetensors.Read(bytes.NewReader(f.checkpointFile(t, m, 2, trainyard.AdapterWeightsFile)))
		must(t, err)
		return file.Tensors
	}
	// The two differ in the order of their sums: the shards hold other sequences than Train's
	// micro-batches, so the prompts they share are passed once in other groups (engine/prefix.go), and
	// AdamW's normalisation turns a rounding difference in a near-zero gradient into a visible fraction of
	// that parameter's step. So the bound is a share of what the steps moved the weights, not of the weights.
	ta, tb, start := read(whole), read(spread), seeded(t, f, whole)
	var diff, moved float64
	for name, a := range ta {
		for i, v := range a.Data {
			diff = math.Max(diff, math.Abs(float64(v-tb[name].Data[i])))
			moved = math.Max(moved, math.Abs(float64(v-start[name].Data[i])))
		}
	}
	if diff > 0.02*moved || moved == 0 {
		t.Fatalf("checkpoints differ by %.3g; the steps moved the weights by up to %.3g", diff, moved)
	}
}

// seeded returns the adapter tensors of m's seeded checkpoint (step 1, seedCheckpoint).
func seeded(t *testing.T, f *fixture, m *trainyard.Model) map[string]safetensors.Tensor {
	file, err := safetensors.Read(bytes.NewReader(f.checkpointFile(t, m, 1, trainyard.AdapterWeightsFile)))
	must(t, err)
	return file.Tensors
}
