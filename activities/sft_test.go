package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/enginetest"
	"github.com/trainyard/trainyard/jobspec"
)

// sftData is JSONL of n short conversations.
func sftData(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		line := map[string]any{"messages": []map[string]any{
			{"role": "system", "content": "Answer with the number only."},
			{"role": "user", "content": fmt.Sprintf("What is %d plus %d?", i, i+1)},
			{"role": "assistant", "content": fmt.Sprint(2*i + 1)},
		}}
		js, _ := json.Marshal(line)
		b.Write(js)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// putURLData stores data as an uploaded artifact and returns its URL.
func (f *fixture) putArtifact(t *testing.T, name string, data []byte) string {
	t.Helper()
	if err := f.blobs.PutFile(context.Background(), f.acct.ID, jobspec.ArtifactFileName("p", name), bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	return jobspec.ArtifactURL(f.acct.Entity, "p", name)
}

func TestSFTJobTrainsAndRecordsCheckpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{ChunkDuration: 1}, nil) // one step per Train activity
	data := sftData(8)
	cfg := jobspec.JobConfig{
		TrainingDataURL:    f.putArtifact(t, "numbers", data),
		Config:             json.RawMessage(`{"batch_size": 4, "learning_rate": 2e-3}`),
		ExperimentalConfig: json.RawMessage(`{"num_epochs": 3}`),
	}
	job := f.newJob(t, f.model, trainyard.JobKindSFT, cfg, nil)

	var turn WaitTurnResult
	must(t, f.run(t, f.acts.WaitTurn, WaitTurnInput{JobID: job.ID}, &turn))
	if turn.Finished || turn.BaseStep != 0 {
		t.Fatalf("WaitTurn = %+v", turn)
	}
	var prep PrepareResult
	must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, &prep))
	if prep.TotalSteps != 6 || prep.NumExamples != 8 {
		t.Fatalf("Prepare = %+v, want 6 steps over 8 examples", prep)
	}
	done, calls := 0, 0
	var last TrainResult
	for done < prep.TotalSteps {
		must(t, f.run(t, f.acts.Train, TrainInput{JobID: job.ID, Done: done, TotalSteps: prep.TotalSteps}, &last))
		done, calls = last.Done, calls+1
	}
	if calls != 6 {
		t.Fatalf("%d Train activities for 6 steps with a tiny chunk duration", calls)
	}
	must(t, f.run(t, f.acts.Complete, CompleteInput{JobID: job.ID, CheckpointStep: 1, TotalSteps: 6, Metrics: last.Metrics}, nil))

	evs := f.events(t, job.ID)
	want := []string{"training_started@1"}
	for i := range 6 {
		want = append(want, fmt.Sprintf("gradient_step@%d", i+2))
	}
	want = append(want, "training_ended@8")
	if got := eventTypes(evs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if evs[0].Data["num_sequences"] != float64(6) {
		t.Fatalf("training_started data = %v; ART reads num_sequences as the number of gradient steps", evs[0].Data)
	}
	first, lastLoss := evs[1].Data["loss"].(float64), evs[6].Data["loss"].(float64)
	if !(lastLoss < first) {
		t.Fatalf("loss did not fall over 3 epochs: first %v, last %v", first, lastLoss)
	}
	ckpt, err := f.db.FindCheckpoint(context.Background(), f.model.ID, 1)
	must(t, err)
	if ckpt.JobID == nil || *ckpt.JobID != job.ID || ckpt.Metrics["train/loss"] != lastLoss {
		t.Fatalf("checkpoint = %+v", ckpt)
	}
	j, err := f.db.GetJob(context.Background(), job.ID)
	must(t, err)
	if j.Status != trainyard.JobCompleted || j.CurrentStep != 6 || j.TotalSteps != 6 || j.Checkpoint == nil || *j.Checkpoint != 1 ||
		j.StartedAt == nil || j.FinishedAt == nil {
		t.Fatalf("job = %+v", j)
	}

	// The new weights fit the data better than the base model does.
	base := testModel(t)
	seqs, err := parseSFTData(data, base, false)
	must(t, err)
	before, after := enginetest.NLL(t, base, nil, seqs), enginetest.NLL(t, base, f.loadAdapter(t, f.model, 1), seqs)
	if !(after < before) {
		t.Fatalf("NLL on the training data: base %.4f, after training %.4f", before, after)
	}

	// Completing again (a retried activity) changes nothing.
	must(t, f.run(t, f.acts.Complete, CompleteInput{JobID: job.ID, CheckpointStep: 1, TotalSteps: 6, Metrics: last.Metrics}, nil))
	if n := len(f.events(t, job.ID)); n != 8 {
		t.Fatalf("%d events after a repeated Complete", n)
	}
}

func TestTrainResumesExactlyFromStoredState(t *testing.T) {
	t.Parallel()
	// Two identical jobs on two models: one trains in one activity, the
	// other is interrupted after every step and resumed from its heartbeat.
	f := newFixture(t, Config{SaveInterval: 1}, nil)
	data := sftData(6)
	cfg := func(name string) jobspec.JobConfig {
		return jobspec.JobConfig{TrainingDataURL: f.putArtifact(t, name, data), Config: json.RawMessage(`{"batch_size": 2, "learning_rate": 1e-3}`)}
	}
	whole, pieces := f.model, f.newModel(t)
	// Both models start from the same checkpoint 1 (a fresh adapter is
	// seeded by the model id, so it would differ).
	f.seedCheckpoint(t, whole, pieces)
	jobA := f.newJob(t, whole, trainyard.JobKindSFT, cfg("a"), nil)
	jobB := f.newJob(t, pieces, trainyard.JobKindSFT, cfg("b"), nil)
	for _, j := range []*trainyard.Job{jobA, jobB} {
		var prep PrepareResult
		must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: j.ID, Kind: trainyard.JobKindSFT}, &prep))
		if prep.TotalSteps != 3 {
			t.Fatalf("steps = %d", prep.TotalSteps)
		}
	}
	var r TrainResult
	must(t, f.run(t, f.acts.Train, TrainInput{JobID: jobA.ID, BaseStep: 1, TotalSteps: 3}, &r))
	if r.Done != 3 {
		t.Fatalf("one activity did %d of 3 steps", r.Done)
	}

	// Job B: a first attempt does one step and "dies" (its result is lost),
	// the retry gets the heartbeat (state stored after step 1) and must not
	// start over from the checkpoint.
	short, err := New(f.acts.d, Config{ChunkDuration: 1})
	must(t, err)
	fb := *f
	fb.acts = short
	must(t, fb.run(t, short.Train, TrainInput{JobID: jobB.ID, BaseStep: 1, TotalSteps: 3}, &r))
	if r.Done != 1 {
		t.Fatalf("first attempt did %d steps", r.Done)
	}
	must(t, fb.run(t, short.Train, TrainInput{JobID: jobB.ID, BaseStep: 1, TotalSteps: 3}, &r, heartbeat{Saved: 1}))
	if r.Done != 2 {
		t.Fatalf("retry from heartbeat 1 reached %d, want 2", r.Done)
	}
	must(t, fb.run(t, short.Train, TrainInput{JobID: jobB.ID, BaseStep: 1, Done: 2, TotalSteps: 3}, &r))
	if r.Done != 3 {
		t.Fatalf("last chunk reached %d", r.Done)
	}
	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.OptimizerStateFile} {
		if !bytes.Equal(f.checkpointFile(t, whole, 2, name), f.checkpointFile(t, pieces, 2, name)) {
			t.Fatalf("%s differs between the uninterrupted and the resumed job", name)
		}
	}
	if got := eventTypes(f.events(t, jobB.ID)); len(got) != 4 {
		t.Fatalf("resumed job events = %v, want started + 3 gradient steps", got)
	}
}

func TestPrepareRejectsBadTrainingData(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	cases := map[string]struct {
		data []byte
		want string
	}{
		"no assistant":  {[]byte(`{"messages":[{"role":"user","content":"hi"}]}` + "\n"), "line 1 has no assistant message"},
		"not json":      {append(sftData(1), []byte("{oops\n")...), "line 2 is not a JSON object"},
		"bad role":      {[]byte(`{"messages":[{"role":"wizard","content":"x"},{"role":"assistant","content":"y"}]}`), "line 1, messages[0]: role \"wizard\""},
		"empty":         {[]byte("\n\n"), "no conversations"},
		"too long":      {[]byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"},{"role":"assistant","content":"y"}]}`), "longer than|more than the model's context"},
		"lr list wrong": {sftData(3), "lists 2 rates but the data makes 3 batches"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := jobspec.JobConfig{TrainingDataURL: f.putArtifact(t, strings.ReplaceAll(name, " ", "-"), c.data)}
			if name == "lr list wrong" {
				cfg.Config = json.RawMessage(`{"batch_size": 1, "learning_rate": [1e-4, 2e-4]}`)
			}
			job := f.newJob(t, f.model, trainyard.JobKindSFT, cfg, nil)
			err := f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, nil)
			var appErr *temporal.ApplicationError
			if !errorsAs(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != ErrInvalidInput {
				t.Fatalf("err = %v, want a non-retryable %s error", err, ErrInvalidInput)
			}
			if !matchesAny(appErr.Message(), c.want) {
				t.Fatalf("message %q does not say %q", appErr.Message(), c.want)
			}
		})
	}
}

func TestPrepareReadsArtifactsOfItsOwnEntityOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	f.putArtifact(t, "data", sftData(2))
	for _, url := range []string{
		jobspec.ArtifactURL("someone-else", "p", "data"),
		"wandb-artifact:///" + f.acct.Entity + "/p/data:v7",
		"wandb-artifact:///" + f.acct.Entity + "/p/missing",
	} {
		job := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: url}, nil)
		err := f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, nil)
		if err == nil || !matchesAny(err.Error(), "was not uploaded to this server|has no version v7") {
			t.Fatalf("%s: err = %v", url, err)
		}
	}
	job := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: "wandb-artifact:///" + f.acct.Entity + "/p/data:latest"}, nil)
	must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: trainyard.JobKindSFT}, nil))
}

func TestParseSFTDataLastAssistantTurnOnly(t *testing.T) {
	base := testModel(t)
	line := `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"}]}`
	all, err := parseSFTData([]byte(line), base, false)
	must(t, err)
	last, err := parseSFTData([]byte(line), base, true)
	must(t, err)
	if a, l := count(all[0].Trainable), count(last[0].Trainable); a != 4 || l != 2 {
		t.Fatalf("trainable tokens: all turns %d (want 4: b, d and two turn ends), last turn %d (want 2)", a, l)
	}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
