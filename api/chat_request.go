package api

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/serving"
)

// chatOptions are the request fields that shape the HTTP answer rather than the sampling.
type chatOptions struct {
	stream       bool
	includeUsage bool
	// defaultModel is set when the request named no model and got the
	// default one.
	defaultModel bool
}

// Chat request limits (OpenAI's).
const (
	maxStopSequences = 4
	maxTopLogprobs   = 20
)

// toolNameRules is OpenAI's rule for function names. It also keeps names free of characters that need
// JSON escaping, which the forced tool-call grammar of serving relies on.
var toolNameRules = []validate.Rule[string]{validate.Pattern(`^[a-zA-Z0-9_-]{1,64}$`)}

// parseChatRequest walks a ChatCompletionRequest body, recording every problem in root's Errors.
// Messages and tools are checked by the same code as trajectories (message.go), plus what a text-only
// model needs. Fields the engine cannot honour (penalties, logit_bias, …) and unknown extras are ignored,
// as the hosted vLLM-based service ignores extras.
func (s *Server) parseChatRequest(root validate.Node) (serving.Request, chatOptions) {
	var req serving.Request
	var opt chatOptions
	body, ok := root.Model()
	if !ok {
		return req, opt
	}
	req.Model, _ = body.Field("model").Optional().Nullable().String()
	if def := s.defaultChatModel(); req.Model == "" && def != "" {
		req.Model, opt.defaultModel = def, true // the document makes model optional; vLLM then serves its default model
	}
	if items, ok := body.Field("messages").List(validate.MinItems(1)); ok {
		req.Messages = make([]trainyard.Message, 0, len(items))
		for _, it := range items {
			if o, ok := it.Dict(); ok {
				var m trainyard.Message
				if decodeChecked(o, checkChatMessage, &m) {
					req.Messages = append(req.Messages, m)
				}
			}
		}
	}

	req.Temperature = optFloat(body.Field("temperature"), 1, validate.Ge(0.0), validate.Le(2.0))
	req.TopP = optFloat(body.Field("top_p"), 1, greaterThanZero, validate.Le(1.0))
	if k := optInt(body.Field("top_k"), 0, validate.Ge(-1)); k > 0 {
		req.TopK = k // -1 and 0 both mean off, as in vLLM
	}
	req.N = optInt(body.Field("n"), 1, validate.Ge(1), validate.Le(s.maxChoices()))
	if seed, ok := body.Field("seed").Optional().Nullable().Int(); ok {
		s64 := int64(seed)
		req.Seed = &s64
	}
	req.Stop = parseStop(body.Field("stop").Optional().Nullable())
	req.MaxTokens = optInt(body.Field("max_tokens"), 0, validate.Ge(1))
	if n := optInt(body.Field("max_completion_tokens"), 0, validate.Ge(1)); n > 0 {
		req.MaxTokens = n // the newer name wins, as in OpenAI
	}
	_, _ = body.Field("logprobs").Optional().Nullable().Bool() // logprobs are always returned
	req.TopLogprobs = optInt(body.Field("top_logprobs"), 0, validate.Ge(0), validate.Le(maxTopLogprobs))

	toolsNode := body.Field("tools")
	req.Tools = parseTools(toolsNode)
	checkToolNames(toolsNode)
	req.ToolChoice = parseToolChoice(body.Field("tool_choice").Optional().Nullable(), req.Tools)
	req.ParallelToolCalls = true
	if p, ok := body.Field("parallel_tool_calls").Optional().Nullable().Bool(); ok {
		req.ParallelToolCalls = p
	}
	req.IgnoreEOS, _ = body.Field("ignore_eos").Optional().Bool()
	if inc, ok := body.Field("include_reasoning").Optional().Bool(); ok {
		req.OmitReasoning = !inc
	}
	// reasoning_effort is validated but has no effect: the templates served here (Qwen3's) have no effort
	// setting, only thinking on or off (chat_template_kwargs enable_thinking).
	_, _ = body.Field("reasoning_effort").Optional().Nullable().Enum("low", "medium", "high")
	req.TemplateKwargs = parseTemplateKwargs(body.Field("chat_template_kwargs").Optional().Nullable())
	if rf, ok := body.Field("response_format").Optional().Nullable().Model(); ok {
		t, _ := rf.Field("type").Enum("text", "json_object")
		req.JSONObject = t == "json_object"
	}

	opt.stream, _ = body.Field("stream").Optional().Nullable().Bool()
	if so, ok := body.Field("stream_options").Optional().Nullable().Model(); ok {
		// The document's StreamOptions defaults include_usage to true once stream_options is sent.
		opt.includeUsage = !so.Has("include_usage")
		if v, ok := so.Field("include_usage").Optional().Nullable().Bool(); ok {
			opt.includeUsage = v
		}
	}
	_, _ = body.Field("user").Optional().Nullable().String()
	return req, opt
}

// defaultChatModel is the model of a request that names none: the first
// base model served here, or with chat forwarded the first one configured.
func (s *Server) defaultChatModel() string {
	bases := s.cfg.BaseModels
	if s.deps.Chat != nil {
		bases = s.deps.Chat.BaseModels()
	}
	if len(bases) == 0 {
		return ""
	}
	return bases[0]
}

// maxChoices is the largest n; inference processes have serving's default.
func (s *Server) maxChoices() int {
	if s.deps.Chat != nil {
		return s.deps.Chat.MaxChoices()
	}
	return serving.DefaultMaxChoices
}

func optFloat(n validate.Node, def float64, rules ...validate.Rule[float64]) float64 {
	if v, ok := n.Optional().Nullable().Float(rules...); ok {
		return v
	}
	return def
}

func optInt(n validate.Node, def int, rules ...validate.Rule[int]) int {
	if v, ok := n.Optional().Nullable().Int(rules...); ok {
		return v
	}
	return def
}

// greaterThanZero is pydantic's gt=0 constraint.
func greaterThanZero(n validate.Node, v float64) bool {
	if v > 0 {
		return true
	}
	n.Fail("greater_than", "Input should be greater than 0", map[string]any{"gt": 0})
	return false
}

// checkChatMessage is checkMessage (which also requires tool-call arguments to be a JSON object) plus what
// the model can take: text content only (an image or audio part is a 422 rather than silently dropped) and
// function tool calls. It only inspects values checkMessage has typed, so nothing is
// reported twice.
func checkChatMessage(o validate.Obj) {
	checkMessage(o)
	for _, part := range listItems(o.Field("content")) {
		if p, ok := asObj(part); ok {
			typ := p.Field("type")
			if t, ok := typ.Value().(string); ok && t != "text" && t != "refusal" {
				typ.Invalid(fmt.Sprintf("content parts of type %q are not supported: this model reads text only", t))
			}
		}
	}
	for _, item := range listItems(o.Field("tool_calls")) {
		call, ok := asObj(item)
		if !ok {
			continue
		}
		if t, _ := call.Field("type").Value().(string); t == "custom" {
			call.Field("type").Invalid("custom tool calls are not supported: this model calls functions only")
		}
	}
}

// listItems returns the items of a value that is a list, recording nothing otherwise.
func listItems(n validate.Node) []validate.Node {
	if _, ok := n.Value().([]any); !ok {
		return nil
	}
	items, _ := n.List()
	return items
}

// asObj returns the node as an object when it is one, recording nothing otherwise.
func asObj(n validate.Node) (validate.Obj, bool) {
	if _, ok := n.Value().(*validate.Object); !ok {
		return validate.Obj{}, false
	}
	return n.Dict()
}

func isString(n validate.Node) bool {
	_, ok := n.Value().(string)
	return ok
}

// isJSONObject reports whether s is a JSON object (blank counts as {}, as the chat template treats it).
func isJSONObject(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return true
	}
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}

// checkToolNames applies OpenAI's function-name rule to the names parseTools has typed.
func checkToolNames(n validate.Node) {
	for _, item := range listItems(n) {
		if t, ok := asObj(item); ok {
			if fn, ok := asObj(t.Field("function")); ok {
				if name := fn.Field("name"); isString(name) {
					name.String(toolNameRules...)
				}
			}
		}
	}
}

// parseTemplateKwargs reads chat_template_kwargs, an object of template variables. Booleans are Go bools
// (serving reads enable_thinking); other values stay JSON, which the template decodes keeping key order.
func parseTemplateKwargs(n validate.Node) map[string]any {
	obj, ok := n.Dict()
	if !ok || obj.Object().Len() == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj.Raw(), &fields); err != nil {
		n.Invalid("chat_template_kwargs must be a JSON object")
		return nil
	}
	out := make(map[string]any, len(fields))
	for k, raw := range fields {
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			out[k] = b
			continue
		}
		out[k] = raw
	}
	return out
}

func parseStop(n validate.Node) []string {
	if s, ok := n.Value().(string); ok {
		if _, ok := n.String(validate.MinLen(1)); ok {
			return []string{s}
		}
		return nil
	}
	items, ok := n.List(validate.MaxItems(maxStopSequences))
	if !ok {
		return nil
	}
	stops := make([]string, 0, len(items))
	for _, it := range items {
		if s, ok := it.String(validate.MinLen(1)); ok {
			stops = append(stops, s)
		}
	}
	return stops
}

// parseToolChoice reads "none" | "auto" | "required" | {"type":"function","function":{"name":...}}.
// The default is "auto" with tools and "none" without, as in OpenAI; forcing a call needs tools.
func parseToolChoice(n validate.Node, tools []trainyard.Tool) serving.ToolChoice {
	tc := serving.ToolChoice{Mode: serving.ToolChoiceNone}
	if len(tools) > 0 {
		tc.Mode = serving.ToolChoiceAuto
	}
	switch n.Value().(type) {
	case nil:
		return tc
	case string:
		mode, ok := n.Enum(serving.ToolChoiceNone, serving.ToolChoiceAuto, serving.ToolChoiceRequired)
		if !ok {
			return tc
		}
		if mode == serving.ToolChoiceRequired && len(tools) == 0 {
			n.Invalid("tool_choice 'required' needs tools")
		}
		return serving.ToolChoice{Mode: mode}
	}
	obj, ok := n.Model()
	if !ok {
		return tc
	}
	_, _ = obj.Field("type").Optional().Enum("function")
	fn, ok := obj.Field("function").Model()
	if !ok {
		return tc
	}
	nameNode := fn.Field("name")
	name, ok := nameNode.String()
	if !ok {
		return tc
	}
	for _, t := range tools {
		if t.Function.Name == name {
			return serving.ToolChoice{Mode: serving.ToolChoiceFunction, Name: name}
		}
	}
	nameNode.Invalid(fmt.Sprintf("tool_choice names function %q, which is not in tools", name))
	return tc
}
