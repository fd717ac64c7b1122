package jobspec_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

func TestParseRLConfig(t *testing.T) {
	s, errs := jobspec.ParseRLConfig(nil)
	if len(errs) != 0 || s.LearningRate != 0 || s.LossFn != "cispo" || !s.ScaleRewards || s.ImportanceSamplingLevel != "token" {
		t.Fatalf("defaults = %+v %v", s, errs)
	}
	// What ART's client sends: every key, most of them null.
	art := `{"advantage_balance":null,"allow_training_without_logprobs":null,"epsilon":null,"epsilon_high":null,
		"importance_sampling_level":null,"kimi_k2_tau":null,"kl_penalty_coef":null,"kl_penalty_reference_step":null,
		"kl_penalty_source":null,"kl_penalty_step_lag":null,"kl_ref_adapter_path":null,"learning_rate":5e-6,
		"logprob_calculation_chunk_size":null,"loss_fn":"ppo","mask_prob_ratio":null,
		"max_negative_advantage_importance_sampling_weight":null,"normalize_advantages":false,
		"num_trajectories_learning_rate_multiplier_power":null,"packed_sequence_length":null,"plot_tensors":null,
		"ppo":true,"precalculate_logprobs":null,"scale_learning_rate_by_reward_std_dev":null,"scale_rewards":true,
		"truncated_importance_sampling":null,"some_future_option":42}`
	s, errs = jobspec.ParseRLConfig(json.RawMessage(art))
	if len(errs) != 0 || s.LossFn != "ppo" || s.ScaleRewards || s.LearningRate != 5e-6 {
		t.Fatalf("ART's config = %+v %v", s, errs)
	}
	s, errs = jobspec.ParseRLConfig(json.RawMessage(`{"importance_sampling_level":"sequence","kl_penalty_coef":0.1,"kl_penalty_source":"sample","epsilon":0.3,"precalculate_logprobs":true}`))
	if len(errs) != 0 || s.ImportanceSamplingLevel != "sequence" || s.KLPenaltyCoef != 0.1 || s.Epsilon != 0.3 || !s.PrecalculateLogprobs {
		t.Fatalf("supported options = %+v %v", s, errs)
	}
	for cfg, field := range map[string]string{
		`{"learning_rate": 0}`:                                     "learning_rate",
		`{"learning_rate": -1}`:                                    "learning_rate",
		`{"loss_fn": "grpo"}`:                                      "loss_fn",
		`{"loss_fn": "cispo", "ppo": true}`:                        "ppo",
		`{"importance_sampling_level": "average"}`:                 "importance_sampling_level",
		`{"advantage_balance": 2}`:                                 "advantage_balance",
		`{"kl_penalty_coef": -0.5}`:                                "kl_penalty_coef",
		`{"mask_prob_ratio": true}`:                                "mask_prob_ratio",
		`{"truncated_importance_sampling": 2.0}`:                   "truncated_importance_sampling",
		`{"kl_penalty_reference_step": 3}`:                         "kl_penalty_reference_step",
		`{"kl_ref_adapter_path": "/tmp/x"}`:                        "kl_ref_adapter_path",
		`{"packed_sequence_length": 0}`:                            "packed_sequence_length",
		`{"max_negative_advantage_importance_sampling_weight": 1}`: "max_negative_advantage_importance_sampling_weight",
		`{"learning_rate": "fast"}`:                                "learning_rate",
	} {
		_, errs := jobspec.ParseRLConfig(json.RawMessage(cfg))
		if len(errs) != 1 || fmt.Sprint(errs[0].Loc) != fmt.Sprint([]any{"experimental_config", field}) {
			t.Errorf("%s: errors = %+v, want one at %s", cfg, errs, field)
		}
	}
	if _, errs := jobspec.ParseRLConfig(json.RawMessage(`[1]`)); len(errs) != 1 {
		t.Errorf("a list config: %v", errs)
	}
}

func TestParseSFTConfig(t *testing.T) {
	s, errs := jobspec.ParseSFTConfig(nil, nil)
	if len(errs) != 0 || s.BatchSize != 0 || s.LearningRates != nil || s.Epochs != 1 || s.AssistantTurns != "all" {
		t.Fatalf("defaults = %+v %v", s, errs)
	}
	s, errs = jobspec.ParseSFTConfig(json.RawMessage(`{"batch_size":"auto","learning_rate":[1e-4,2e-4],"assistant_turns":"last","metric_logging":{"enabled":true}}`),
		json.RawMessage(`{"num_epochs":3,"shuffle":true,"seed":9}`))
	if len(errs) != 0 || s.BatchSize != 0 || len(s.LearningRates) != 2 || s.AssistantTurns != "last" || s.Epochs != 3 || !s.Shuffle || s.Seed != 9 {
		t.Fatalf("full config = %+v %v", s, errs)
	}
	if rates, err := s.StepLearningRates(2); err != nil || rates[1] != 2e-4 {
		t.Fatalf("rates = %v %v", rates, err)
	}
	if _, err := s.StepLearningRates(3); err == nil {
		t.Fatal("a rate list of the wrong length was accepted")
	}
	for _, c := range []struct{ config, experimental, loc string }{
		{`{"batch_size":0}`, ``, "[config batch_size]"},
		{`{"batch_size":"big"}`, ``, "[config batch_size]"},
		{`{"learning_rate":[]}`, ``, "[config learning_rate]"},
		{`{"learning_rate":[1e-4,-1]}`, ``, "[config learning_rate 1]"},
		{`{"assistant_turns":"first"}`, ``, "[config assistant_turns]"},
		{``, `{"num_epochs":0}`, "[experimental_config num_epochs]"},
	} {
		_, errs := jobspec.ParseSFTConfig(json.RawMessage(c.config), json.RawMessage(c.experimental))
		if len(errs) != 1 || fmt.Sprint(errs[0].Loc) != c.loc {
			t.Errorf("%s %s: errors = %+v, want one at %s", c.config, c.experimental, errs, c.loc)
		}
	}
	if n := jobspec.AutoBatchSize(1); n != 1 {
		t.Errorf("auto batch of 1 example = %d", n)
	}
}

func TestCheckDataURL(t *testing.T) {
	policy := jobspec.DataPolicy{S3: trainyard.S3ReadPolicy{OwnBucket: "trainyard", ReadBuckets: []string{"bucket"}}}
	for url, want := range map[string]string{
		"s3://bucket/data/train.jsonl":                  "",
		"https://example.com/train.jsonl":               "",
		"wandb-artifact:///team/proj/data:v0":           "",
		"wandb-artifact:///team/proj/data:latest":       "",
		"wandb-artifact:///team/proj/data":              "",
		"wandb-artifact:///team/my proj?/data":          "PROJECT",
		"wandb-artifact:///team/proj/data:v9":           "has no version v9",
		"wandb-artifact:///team/proj/..":                "NAME \"..\"",
		"wandb-artifact:///team/../data":                "PROJECT \"..\"",
		"wandb-artifact:///./proj/data":                 "ENTITY",
		"wandb-artifact:///team/proj/data:../x":         "ENTITY/PROJECT/NAME",
		"wandb-artifact:///team/proj/data:v0:v1":        "VERSION",
		"file:///tmp/train.jsonl":                       "disabled",
		"s3://bucket":                                   "names no object",
		"s3://trainyard/files/other/artifacts/p/n/v0/x": "own bucket",
		"s3://bucket/x/../../trainyard/files/a/b":       "segment",
		"s3://elsewhere/train.jsonl":                    "not one this server reads",
		"ftp://example.com/x":                           "unsupported URL scheme",
		"wandb-artifact:///team/proj":                   "ENTITY/PROJECT/NAME",
		"wandb-artifact:///team/proj/data:":             "ENTITY/PROJECT/NAME",
		"wandb-artifact://team/proj/data":               "ENTITY/PROJECT/NAME",
	} {
		err := jobspec.CheckDataURL(url, policy)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: err = %v, want %q", url, err, want)
		}
	}
	policy.AllowFile = true
	if err := jobspec.CheckDataURL("file:///tmp/train.jsonl", policy); err != nil {
		t.Errorf("file URL with file URLs allowed: %v", err)
	}
	ref, err := jobspec.ParseArtifactURL("wandb-artifact:///team/proj/data:v3")
	if err != nil || ref != (jobspec.ArtifactRef{Entity: "team", Project: "proj", Name: "data", Version: "v3"}) {
		t.Errorf("jobspec.ParseArtifactURL = %+v %v", ref, err)
	}
}
