package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/zoo"
	"github.com/trainyard/trainyard/jobspec"
)

func TestDefaultLearningRateComesFromTheBaseModel(t *testing.T) {
	t.Parallel()
	tiny := testModel(t)
	if rl, sft := defaultLearningRate(tiny, trainyard.JobKindRL), defaultLearningRate(tiny, trainyard.JobKindSFT); rl != 1e-3 || sft != 3e-3 {
		t.Fatalf("tiny-chat defaults: RL %g, SFT %g; want 1e-3 and 3e-3", rl, sft)
	}
	// The same weights opened from a directory are a model without a
	// recommendation: the service-wide defaults apply.
	dir := t.TempDir()
	cfg, weights, err := zoo.Open(testBaseName)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), weights, 0o600))
	other, err := engine.OpenDir(dir)
	must(t, err)
	if rl, sft := defaultLearningRate(other, trainyard.JobKindRL), defaultLearningRate(other, trainyard.JobKindSFT); rl != DefaultRLLearningRate || sft != DefaultSFTLearningRate {
		t.Fatalf("defaults of a model from a directory: RL %g, SFT %g", rl, sft)
	}
}

// TestPreparedLearningRates checks the rate each prepared step trains at:
// the base model's default when the client sends none (or null), the
// client's rate, however small, otherwise.
func TestPreparedLearningRates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	group := func(text string, reward float64) map[string]any {
		return map[string]any{"reward": reward, "messages_and_choices": []any{
			map[string]any{"role": "user", "content": "Say a word."},
			map[string]any{"finish_reason": "stop", "index": 0, "message": map[string]any{"role": "assistant", "content": text}},
		}}
	}
	rlInput, err := json.Marshal(map[string]any{"trajectory_groups": []any{
		map[string]any{"trajectories": []any{group("yes", 1), group("no", 0)}}}})
	must(t, err)
	dataURL := f.putArtifact(t, "lr", sftData(2))
	for _, c := range []struct {
		kind trainyard.JobKind
		cfg  jobspec.JobConfig
		want float64
	}{
		{trainyard.JobKindRL, jobspec.JobConfig{}, 1e-3},
		{trainyard.JobKindRL, jobspec.JobConfig{ExperimentalConfig: json.RawMessage(`{"learning_rate": null}`)}, 1e-3},
		{trainyard.JobKindRL, jobspec.JobConfig{ExperimentalConfig: json.RawMessage(`{"learning_rate": 5e-6}`)}, 5e-6},
		{trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: dataURL}, 3e-3},
		{trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: dataURL, Config: json.RawMessage(`{"learning_rate": 1e-4}`)}, 1e-4},
	} {
		var input []byte
		if c.kind == trainyard.JobKindRL {
			input = rlInput
		}
		job := f.newJob(t, f.newModel(t), c.kind, c.cfg, input)
		must(t, f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: c.kind}, nil))
		p, err := f.acts.loadPlan(context.Background(), job.ID)
		must(t, err)
		if len(p.Steps) == 0 {
			t.Fatalf("%s job prepared no steps", c.kind)
		}
		for _, s := range p.Steps {
			if s.LearningRate != float32(c.want) {
				t.Errorf("%s job with %s %s: step learning rate %g, want %g", c.kind, c.cfg.Config, c.cfg.ExperimentalConfig, s.LearningRate, c.want)
			}
		}
	}
}
