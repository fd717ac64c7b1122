package api

import (
	"encoding/json"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/jobspec"
)

// This file validates the OpenAI chat shapes inside trajectories: messages
// of every role, sampled Choices and tool definitions. Fields that trainyard
// decodes into Go types are checked strictly (no "0" for 0), so a value that
// passes always decodes; extra fields are allowed everywhere and kept.
// Where the document has a union of message types, errors are reported at
// the field of the member the object's role selects, not once per member.

// messageRoles are the roles of the document's message params.
var messageRoles = []string{"system", "developer", "user", "assistant", "tool", "function"}

// finishReasons are Choice.finish_reason's allowed values.
var finishReasons = []string{"stop", "length", "tool_calls", "content_filter", "function_call"}

// parseMessages validates a messages_and_choices list and decodes it.
func parseMessages(n validate.Node) []trainyard.MessageOrChoice {
	items, _ := n.List()
	out := make([]trainyard.MessageOrChoice, 0, len(items))
	for _, it := range items {
		o, ok := it.Dict()
		if !ok {
			continue
		}
		if o.Has("finish_reason") && o.Has("index") && o.Has("message") {
			var ch trainyard.Choice
			if decodeChecked(o, checkChoice, &ch) {
				out = append(out, trainyard.MessageOrChoice{Choice: &ch})
			}
			continue
		}
		var m trainyard.Message
		if decodeChecked(o, checkMessage, &m) {
			out = append(out, trainyard.MessageOrChoice{Message: &m})
		}
	}
	return out
}

// decodeChecked runs check on o and, when it found nothing wrong, decodes
// o's raw JSON into dst. A decode failure after a clean check would be a
// gap in check; it is reported as a value error rather than lost.
func decodeChecked(o validate.Obj, check func(validate.Obj), dst any) bool {
	before := o.Errors().Len()
	check(o)
	if o.Errors().Len() != before {
		return false
	}
	if err := json.Unmarshal(o.Raw(), dst); err != nil {
		o.Invalid("cannot be read: " + err.Error())
		return false
	}
	return true
}

// checkMessage validates a message param by its role.
func checkMessage(o validate.Obj) {
	role, ok := o.Field("role").Strict().Enum(messageRoles...)
	o.Field("name").Optional().Strict().String()
	if !ok {
		return
	}
	content := o.Field("content")
	switch role {
	case "system", "developer", "user":
		checkContent(content)
	case "tool":
		checkContent(content)
		o.Field("tool_call_id").Strict().String()
	case "function":
		content.Nullable().Strict().String()
		o.Field("name").Strict().String()
	case "assistant":
		checkAssistant(o)
	}
}

// checkAssistant validates the fields of an assistant message (also the
// message of a Choice).
func checkAssistant(o validate.Obj) {
	checkContent(o.Field("content").Optional().Nullable())
	o.Field("refusal").Optional().Nullable().Strict().String()
	o.Field("reasoning_content").Optional().Nullable().Strict().String()
	o.Field("reasoning").Optional().Nullable().Strict().String()
	if calls, ok := o.Field("tool_calls").Optional().Nullable().List(); ok {
		for _, call := range calls {
			checkToolCall(call)
		}
	}
	if fc, ok := o.Field("function_call").Optional().Nullable().Dict(); ok {
		fc.Field("name").Strict().String()
		fc.Field("arguments").Strict().String()
	}
}

// checkContent validates a content that is a string or a list of parts.
// For a value of another type it reports both union members, as pydantic
// does (["...","content","str"] and ["...","content","list"]).
func checkContent(n validate.Node) {
	switch v := n.Value(); v.(type) {
	case []any:
		parts, _ := n.List()
		for _, p := range parts {
			checkContentPart(p)
		}
	case string, nil:
		// The accessor reports "missing" or a disallowed null, and accepts
		// a string or an allowed absence.
		n.Strict().String()
	default:
		n.Member("str").String()
		n.Member("list").List()
	}
}

// checkContentPart validates one element of a list content.
func checkContentPart(n validate.Node) {
	p, ok := n.Dict()
	if !ok {
		return
	}
	typ, ok := p.Field("type").Strict().String()
	if !ok {
		return
	}
	switch typ {
	case "text":
		p.Field("text").Strict().String()
	case "refusal":
		p.Field("refusal").Strict().String()
	}
}

// checkToolCall validates one tool call of an assistant message.
func checkToolCall(n validate.Node) {
	call, ok := n.Dict()
	if !ok {
		return
	}
	call.Field("id").Strict().String()
	typ, ok := call.Field("type").Strict().Enum("function", "custom")
	if !ok {
		return
	}
	if typ == "custom" {
		call.Field("custom").Dict()
		return
	}
	if fn, ok := call.Field("function").Dict(); ok {
		fn.Field("name").Strict().String()
		args := fn.Field("arguments").Strict()
		if s, ok := args.String(); ok && !isJSONObject(s) {
			// As in chat requests: the template renders arguments as an
			// object, so anything else could not be trained on.
			args.Invalid("arguments must be a JSON object encoded as a string")
		}
	}
}

// checkChoice validates a sampled Choice.
func checkChoice(o validate.Obj) {
	o.Field("finish_reason").Strict().Enum(finishReasons...)
	o.Field("index").Strict().Int()
	if msg, ok := o.Field("message").Dict(); ok {
		msg.Field("role").Strict().Enum("assistant")
		checkAssistant(msg)
	}
	if lp, ok := o.Field("logprobs").Optional().Nullable().Dict(); ok {
		checkTokenLogprobs(lp.Field("content"))
		checkTokenLogprobs(lp.Field("refusal"))
	}
}

// checkTokenLogprobs validates an optional list of ChatCompletionTokenLogprob.
func checkTokenLogprobs(n validate.Node) {
	items, _ := n.Optional().Nullable().List()
	for _, it := range items {
		tok, ok := it.Dict()
		if !ok {
			continue
		}
		checkLogprob(tok)
		tops, _ := tok.Field("top_logprobs").List()
		for _, top := range tops {
			if t, ok := top.Dict(); ok {
				checkLogprob(t)
			}
		}
	}
}

// checkLogprob validates the token, logprob and bytes of one token. A
// token that names a token id must name one (jobspec.CheckTokenID), and a
// logprob is a log probability: finite and at most 0.
func checkLogprob(o validate.Obj) {
	tok := o.Field("token").Strict()
	if s, ok := tok.String(); ok {
		if err := jobspec.CheckTokenID(s); err != nil {
			tok.Invalid(err.Error())
		}
	}
	o.Field("logprob").Strict().Float(validate.Le(0.0))
	bytes, _ := o.Field("bytes").Optional().Nullable().List()
	for _, b := range bytes {
		b.Strict().Int()
	}
}

// parseTools validates an optional, nullable list of function tools.
func parseTools(n validate.Node) []trainyard.Tool {
	items, _ := n.Optional().Nullable().List()
	out := make([]trainyard.Tool, 0, len(items))
	for _, it := range items {
		o, ok := it.Dict()
		if !ok {
			continue
		}
		var t trainyard.Tool
		if decodeChecked(o, checkTool, &t) {
			out = append(out, t)
		}
	}
	return out
}

// checkTool validates a ChatCompletionFunctionToolParam.
func checkTool(o validate.Obj) {
	o.Field("type").Strict().Enum("function")
	fn, ok := o.Field("function").Dict()
	if !ok {
		return
	}
	fn.Field("name").Strict().String()
	fn.Field("description").Optional().Strict().String()
	fn.Field("parameters").Optional().Dict()
	fn.Field("strict").Optional().Nullable().Strict().Bool()
}
