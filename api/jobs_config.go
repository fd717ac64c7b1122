package api

import (
	"encoding/json"

	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/workflows"
)

// The configuration objects of job requests are checked in two passes: the
// types of the known fields here (FastAPI-shaped errors, strict, because the
// worker decodes them into Go types without coercion), then the values by
// the workflows' rules, which reject what trainyard cannot train with.
// Unknown keys are accepted, as clients send options newer than the
// server.

// Types of the RL experimental_config fields.
var (
	rlFloatFields = []string{"advantage_balance", "epsilon", "epsilon_high", "kimi_k2_tau", "learning_rate",
		"max_negative_advantage_importance_sampling_weight", "kl_penalty_coef",
		"num_trajectories_learning_rate_multiplier_power", "truncated_importance_sampling"}
	rlBoolFields = []string{"mask_prob_ratio", "ppo", "precalculate_logprobs", "scale_rewards", "normalize_advantages",
		"allow_training_without_logprobs", "scale_learning_rate_by_reward_std_dev", "plot_tensors"}
	rlIntFields  = []string{"logprob_calculation_chunk_size", "packed_sequence_length", "kl_penalty_reference_step", "kl_penalty_step_lag"}
	rlEnumFields = map[string][]string{
		"importance_sampling_level": {"token", "sequence", "average", "geometric_average"},
		"loss_fn":                   {"cispo", "ppo"},
		"kl_penalty_source":         {"current_learner", "sample"},
	}
)

// rlExperimentalConfig validates an RL experimental_config and returns its
// raw JSON (nil when absent or null).
func rlExperimentalConfig(n validate.Node) json.RawMessage {
	obj, ok := n.Optional().Nullable().Dict()
	if !ok {
		return nil
	}
	before := n.Errors().Len()
	for _, f := range rlFloatFields {
		obj.Field(f).Optional().Nullable().Strict().Float()
	}
	for _, f := range rlBoolFields {
		obj.Field(f).Optional().Nullable().Strict().Bool()
	}
	for _, f := range rlIntFields {
		obj.Field(f).Optional().Nullable().Strict().Int()
	}
	for _, f := range []string{"importance_sampling_level", "loss_fn", "kl_penalty_source"} {
		obj.Field(f).Optional().Nullable().Enum(rlEnumFields[f]...)
	}
	obj.Field("kl_ref_adapter_path").Optional().Nullable().String()
	raw := json.RawMessage(obj.Raw())
	if n.Errors().Len() == before {
		addFieldErrors(n.Errors(), workflows.CheckRLConfig(raw))
	}
	return raw
}

// sftConfigs validates an SFT job's config and experimental_config and
// returns their raw JSON.
func sftConfigs(configNode, experimentalNode validate.Node) (config, experimental json.RawMessage) {
	errs := configNode.Errors()
	before := errs.Len()
	if obj, ok := configNode.Optional().Nullable().Dict(); ok {
		bs := obj.Field("batch_size").Optional().Nullable().Strict()
		if v, ok := bs.AnyOf(validate.KindInt, validate.KindStr); ok {
			if s, isStr := v.(string); isStr && s != "auto" {
				bs.Member("literal['auto']").Fail("literal_error", "Input should be 'auto'", map[string]any{"expected": "'auto'"})
			}
		}
		lr := obj.Field("learning_rate").Optional().Nullable().Strict()
		if _, isList := lr.Value().([]any); isList {
			nodes, _ := lr.List(validate.MinItems(1))
			for _, it := range nodes {
				it.Float()
			}
		} else {
			lr.Float()
		}
		obj.Field("assistant_turns").Optional().Enum("all", "last")
		config = obj.Raw()
	}
	if obj, ok := experimentalNode.Optional().Nullable().Dict(); ok {
		obj.Field("num_epochs").Optional().Nullable().Strict().Int()
		obj.Field("shuffle").Optional().Nullable().Strict().Bool()
		obj.Field("seed").Optional().Nullable().Strict().Int()
		experimental = obj.Raw()
	}
	if errs.Len() == before {
		addFieldErrors(errs, workflows.CheckSFTConfig(config, experimental))
	}
	return config, experimental
}

// addFieldErrors records the value problems found by the workflows' rules,
// under "body", as pydantic value errors.
func addFieldErrors(errs *validate.Errors, fes []workflows.FieldError) {
	for _, fe := range fes {
		loc := append([]any{"body"}, fe.Loc...)
		errs.At(fe.Input, loc...).Invalid(fe.Msg)
	}
}
