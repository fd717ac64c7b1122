package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
)

// FieldError is one problem with a job's request configuration. Loc is the
// path inside the request body (e.g. ["experimental_config", "loss_fn"]);
// the API prefixes "body" and answers 422.
type FieldError struct {
	Loc   []any
	Msg   string
	Type  string
	Input any
}

// The documented ranges of numeric settings (README, "Job settings"). Every
// value inside them trains; the API refuses the rest with a 422.
const (
	// MaxLearningRate bounds learning_rate, RL and SFT, and the RL rate
	// after its multipliers. LoRA trains at 1e-6 to 1e-2; past 0.1 a step
	// wrecks the adapter, and every later job on the model with it.
	MaxLearningRate = 0.1
	// maxEpsilon bounds the clipping ranges epsilon and epsilon_high.
	maxEpsilon = 100.0
	// maxKLPenaltyCoef bounds kl_penalty_coef.
	maxKLPenaltyCoef = 100.0
	// maxLRPower bounds num_trajectories_learning_rate_multiplier_power.
	maxLRPower = 2.0
	// maxCount bounds the integer sizes that trainyard accepts and ignores.
	maxCount = 1 << 20
)

// RLSettings is a validated RL experimental_config with defaults applied.
type RLSettings struct {
	// LearningRate is experimental_config.learning_rate; 0 when the client
	// sent none, and the job then trains at the base model's default
	// (defaultLearningRate).
	LearningRate            float64
	LossFn                  string // "cispo" | "ppo"
	Epsilon, EpsilonHigh    float64
	ImportanceSamplingLevel string // "token" | "sequence"
	ScaleRewards            bool
	AdvantageBalance        float64
	KLPenaltyCoef           float64
	PrecalculateLogprobs    bool
	// LRTrajectoryPower scales the learning rate by
	// num_trajectories^power (num_trajectories_learning_rate_multiplier_power).
	LRTrajectoryPower float64
	// LRByRewardStd scales the learning rate by the reward standard
	// deviation (scale_learning_rate_by_reward_std_dev).
	LRByRewardStd bool
}

// rlConfigWire is experimental_config as clients send it. Pointers tell
// "absent or null" from a value.
type rlConfigWire struct {
	LearningRate            *float64 `json:"learning_rate"`
	LossFn                  *string  `json:"loss_fn"`
	PPO                     *bool    `json:"ppo"`
	Epsilon                 *float64 `json:"epsilon"`
	EpsilonHigh             *float64 `json:"epsilon_high"`
	ImportanceSamplingLevel *string  `json:"importance_sampling_level"`
	ScaleRewards            *bool    `json:"scale_rewards"`
	NormalizeAdvantages     *bool    `json:"normalize_advantages"`
	AdvantageBalance        *float64 `json:"advantage_balance"`
	KLPenaltyCoef           *float64 `json:"kl_penalty_coef"`
	KLPenaltySource         *string  `json:"kl_penalty_source"`
	PrecalculateLogprobs    *bool    `json:"precalculate_logprobs"`
	AllowWithoutLogprobs    *bool    `json:"allow_training_without_logprobs"`
	LRTrajectoryPower       *float64 `json:"num_trajectories_learning_rate_multiplier_power"`
	LRByRewardStd           *bool    `json:"scale_learning_rate_by_reward_std_dev"`
	ChunkSize               *int     `json:"logprob_calculation_chunk_size"`
	PackedSequenceLength    *int     `json:"packed_sequence_length"`
	PlotTensors             *bool    `json:"plot_tensors"`
	// Options trainyard does not implement: accepted only when null or
	// at their no-op value.
	MaskProbRatio             *bool            `json:"mask_prob_ratio"`
	MaxNegAdvISWeight         *float64         `json:"max_negative_advantage_importance_sampling_weight"`
	TruncatedImportanceSample *float64         `json:"truncated_importance_sampling"`
	KimiK2Tau                 *float64         `json:"kimi_k2_tau"`
	KLPenaltyReferenceStep    *int             `json:"kl_penalty_reference_step"`
	KLPenaltyStepLag          *int             `json:"kl_penalty_step_lag"`
	KLRefAdapterPath          *string          `json:"kl_ref_adapter_path"`
	LossFnConfig              *json.RawMessage `json:"loss_fn_config"`
	AdamParams                *json.RawMessage `json:"adam_params"`
}

// ParseRLConfig validates an RL job's experimental_config (null, absent or
// an object; unknown keys are ignored, as clients send newer options) and
// applies the defaults. Unsupported values are reported, not ignored.
func ParseRLConfig(raw json.RawMessage) (RLSettings, []FieldError) {
	s := RLSettings{LossFn: "cispo", ImportanceSamplingLevel: "token", ScaleRewards: true}
	var w rlConfigWire
	if errs := decodeObject(raw, &w, "experimental_config"); errs != nil {
		return s, errs
	}
	var errs []FieldError
	bad := func(field, msg string, input any) {
		errs = append(errs, FieldError{Loc: []any{"experimental_config", field}, Msg: msg, Type: "value_error", Input: input})
	}
	within := func(field string, v *float64, dst *float64, max float64) {
		if v == nil {
			return
		}
		if !finite(*v) || *v <= 0 || *v > max {
			bad(field, fmt.Sprintf("must be greater than 0 and at most %g", max), *v)
			return
		}
		*dst = *v
	}
	within("learning_rate", w.LearningRate, &s.LearningRate, MaxLearningRate)
	within("epsilon", w.Epsilon, &s.Epsilon, maxEpsilon)
	within("epsilon_high", w.EpsilonHigh, &s.EpsilonHigh, maxEpsilon)
	if w.LossFn != nil {
		if *w.LossFn != "cispo" && *w.LossFn != "ppo" {
			bad("loss_fn", `must be "cispo" or "ppo"`, *w.LossFn)
		} else {
			s.LossFn = *w.LossFn
		}
	}
	if w.PPO != nil && *w.PPO {
		if w.LossFn != nil && *w.LossFn == "cispo" {
			bad("ppo", `ppo=true contradicts loss_fn "cispo"`, true)
		}
		s.LossFn = "ppo"
	}
	if v := w.ImportanceSamplingLevel; v != nil {
		switch *v {
		case "token", "sequence":
			s.ImportanceSamplingLevel = *v
		case "average", "geometric_average":
			bad("importance_sampling_level", fmt.Sprintf("%q is not supported by trainyard; use \"token\" or \"sequence\"", *v), *v)
		default:
			bad("importance_sampling_level", `must be "token" or "sequence"`, *v)
		}
	}
	if w.ScaleRewards != nil {
		s.ScaleRewards = *w.ScaleRewards
	}
	if w.NormalizeAdvantages != nil && !*w.NormalizeAdvantages {
		s.ScaleRewards = false
	}
	if v := w.AdvantageBalance; v != nil {
		if !finite(*v) || *v < -1 || *v > 1 {
			bad("advantage_balance", "must be a number between -1 and 1", *v)
		} else {
			s.AdvantageBalance = *v
		}
	}
	if v := w.KLPenaltyCoef; v != nil {
		if !finite(*v) || *v < 0 || *v > maxKLPenaltyCoef {
			bad("kl_penalty_coef", fmt.Sprintf("must be between 0 and %g", maxKLPenaltyCoef), *v)
		} else {
			s.KLPenaltyCoef = *v
		}
	}
	if v := w.KLPenaltySource; v != nil && *v != "current_learner" && *v != "sample" {
		bad("kl_penalty_source", `must be "current_learner" or "sample"`, *v)
	}
	if w.PrecalculateLogprobs != nil {
		s.PrecalculateLogprobs = *w.PrecalculateLogprobs
	}
	if v := w.LRTrajectoryPower; v != nil {
		if !finite(*v) || math.Abs(*v) > maxLRPower {
			bad("num_trajectories_learning_rate_multiplier_power", fmt.Sprintf("must be between %g and %g", -maxLRPower, maxLRPower), *v)
		} else {
			s.LRTrajectoryPower = *v
		}
	}
	if w.LRByRewardStd != nil {
		s.LRByRewardStd = *w.LRByRewardStd
	}
	if v := w.ChunkSize; v != nil && (*v < 1 || *v > maxCount) {
		bad("logprob_calculation_chunk_size", fmt.Sprintf("must be between 1 and %d", maxCount), *v)
	}
	if v := w.PackedSequenceLength; v != nil && (*v < 1 || *v > maxCount) {
		bad("packed_sequence_length", fmt.Sprintf("must be between 1 and %d", maxCount), *v)
	}
	unsupported := func(field string, set bool, input any) {
		if set {
			bad(field, "is not supported by trainyard; leave it null", input)
		}
	}
	unsupported("mask_prob_ratio", w.MaskProbRatio != nil && *w.MaskProbRatio, true)
	unsupported("max_negative_advantage_importance_sampling_weight", w.MaxNegAdvISWeight != nil, deref(w.MaxNegAdvISWeight))
	unsupported("truncated_importance_sampling", w.TruncatedImportanceSample != nil, deref(w.TruncatedImportanceSample))
	unsupported("kimi_k2_tau", w.KimiK2Tau != nil, deref(w.KimiK2Tau))
	unsupported("kl_penalty_reference_step", w.KLPenaltyReferenceStep != nil, deref(w.KLPenaltyReferenceStep))
	unsupported("kl_penalty_step_lag", w.KLPenaltyStepLag != nil, deref(w.KLPenaltyStepLag))
	unsupported("kl_ref_adapter_path", w.KLRefAdapterPath != nil, deref(w.KLRefAdapterPath))
	// The objects are echoed as sent, as every 422 shows its input.
	unsupported("loss_fn_config", w.LossFnConfig != nil && !isNull(*w.LossFnConfig), deref(w.LossFnConfig))
	unsupported("adam_params", w.AdamParams != nil && !isNull(*w.AdamParams), deref(w.AdamParams))
	return s, errs
}

// decodeObject decodes raw (null or absent: nothing) into dst, reporting a
// type error at loc.
func decodeObject(raw json.RawMessage, dst any, loc ...any) []FieldError {
	if len(bytes.TrimSpace(raw)) == 0 || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return []FieldError{{Loc: append(loc, typeErr.Field), Msg: "must be " + jsonTypeName(typeErr.Type.Kind()),
				Type: "type_error", Input: typeErr.Value}}
		}
		return []FieldError{{Loc: loc, Msg: "must be an object", Type: "type_error"}}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// jsonTypeName names the JSON type that a Go kind decodes from.
func jsonTypeName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "a list"
	}
	return "an object"
}
