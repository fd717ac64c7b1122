package api

import (
	"encoding/json"

	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/jobspec"
)

// The configuration objects of job requests are checked in two passes: the
// types of the known fields here (FastAPI-shaped errors, strict, because the
// worker decodes them into Go types without coercion), then the values by
// the parser training uses (jobspec), which rejects what trainyard cannot
// train with.
// Unknown keys are accepted, as clients send options newer than the
// server.

// rlExperimentalConfig validates an RL experimental_config and returns its
// raw JSON (nil when absent or null). The types come from the parser's own
// schema (jobspec.RLFields), so the two cannot disagree.
func rlExperimentalConfig(n validate.Node) json.RawMessage {
	obj, ok := n.Optional().Nullable().Dict()
	if !ok {
		return nil
	}
	before := n.Errors().Len()
	for _, f := range jobspec.RLFields() {
		field := obj.Field(f.Name).Optional().Nullable()
		switch f.Kind {
		case jobspec.KindFloat:
			field.Strict().Float()
		case jobspec.KindInt:
			field.Strict().Int()
		case jobspec.KindBool:
			field.Strict().Bool()
		case jobspec.KindString:
			field.String()
		case jobspec.KindEnum:
			field.Enum(f.Values...)
		}
	}
	raw := json.RawMessage(obj.Raw())
	if n.Errors().Len() == before {
		_, errs := jobspec.ParseRLConfig(raw)
		addFieldErrors(n.Errors(), errs)
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
		_, fes := jobspec.ParseSFTConfig(config, experimental)
		addFieldErrors(errs, fes)
	}
	return config, experimental
}

// addFieldErrors records the value problems found by the workflows' rules,
// under "body", as pydantic value errors.
func addFieldErrors(errs *validate.Errors, fes []jobspec.FieldError) {
	for _, fe := range fes {
		loc := append([]any{"body"}, fe.Loc...)
		errs.At(fe.Input, loc...).Invalid(fe.Msg)
	}
}
