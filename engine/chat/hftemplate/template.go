package hftemplate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"

	"github.com/trainyard/trainyard/engine/chat"
)

var (
	// ErrInvalidInput reports messages or tools that cannot be given to a template (no role, tool-call
	// arguments that are not a JSON object, ...): the caller's request is at fault (HTTP 422).
	ErrInvalidInput = errors.New("invalid chat template input")
	// ErrTemplate reports a template that does not parse or fails while rendering (undefined values,
	// wrong types): the model's template is at fault, or it does not accept this conversation.
	ErrTemplate = errors.New("chat template error")
)

// RaisedError is the template's own refusal: it called raise_exception(Message), e.g. Llama 3.1's
// "This model only supports single tool-calls at once!". It matches ErrTemplate with errors.Is, and its
// message is meant for the API caller (HTTP 400/422).
type RaisedError struct{ Message string }

func (e *RaisedError) Error() string { return "chat template: " + e.Message }

// Is makes errors.Is(err, ErrTemplate) hold.
func (e *RaisedError) Is(target error) bool { return target == ErrTemplate }

// Template is one parsed chat template with the special tokens it is rendered with. It is immutable and
// safe for concurrent use.
type Template struct {
	tpl      *exec.Template
	bos, eos string
	now      func() time.Time
}

// Options are what a template is rendered with besides the conversation.
type Options struct {
	// BOSToken and EOSToken become bos_token and eos_token; an empty one is left undefined, as
	// transformers leaves a tokenizer's unset special tokens out.
	BOSToken, EOSToken string
	// Now is the clock strftime_now reads (Llama 3.2 prints today's date); nil means time.Now.
	Now func() time.Time
}

// Request is one rendering: OpenAI-shaped messages, the function tools offered, whether to append the
// assistant header the model continues from, and extra template variables (enable_thinking, ...).
type Request struct {
	Messages            []chat.Message
	Tools               []chat.Tool
	AddGenerationPrompt bool
	Kwargs              map[string]any
}

// New parses source (a chat_template) once; parsed sources are cached, so a template loaded again for
// another model or request costs a map look-up.
func New(source string, opts Options) (*Template, error) {
	tpl, err := parse(source)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Template{tpl: tpl, bos: opts.BOSToken, eos: opts.EOSToken, now: now}, nil
}

// parsed caches parsed templates by their source's hash. Chat templates are few (one or two per model),
// so the cache is bounded only as a guard against callers that make templates up on the fly.
var parsed = struct {
	sync.Mutex
	m map[[32]byte]*exec.Template
}{m: map[[32]byte]*exec.Template{}}

const maxCached = 256

const rootName = "/chat_template"

func parse(source string) (tpl *exec.Template, err error) {
	key := sha256.Sum256([]byte(source))
	parsed.Lock()
	tpl = parsed.m[key]
	parsed.Unlock()
	if tpl != nil {
		return tpl, nil
	}
	defer func() {
		if r := recover(); r != nil {
			tpl, err = nil, fmt.Errorf("%w: parsing panicked: %v", ErrTemplate, r)
		}
	}()
	source = hoistConditionals(source)
	// The loader holds only the template itself, and include/import are not statements here, so a
	// template reads nothing else.
	loader, err := loaders.NewMemoryLoader(map[string]string{rootName: source})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	tpl, err = exec.NewTemplate(rootName, newConfig(), loader, environment)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, cleanError(err.Error(), source))
	}
	parsed.Lock()
	if len(parsed.m) >= maxCached {
		for k := range parsed.m { // evict an arbitrary entry
			delete(parsed.m, k)
			break
		}
	}
	parsed.m[key] = tpl
	parsed.Unlock()
	return tpl, nil
}

// cleanError drops the template source gonja quotes in its parse errors.
func cleanError(msg, source string) string {
	if source != "" {
		msg = strings.ReplaceAll(msg, "'"+source+"'", "the chat template")
	}
	return msg
}

// Render renders req to text, exactly as transformers' apply_chat_template(messages, tools=tools,
// add_generation_prompt=..., tokenize=False, **kwargs) does.
func (t *Template) Render(req Request) (string, error) {
	msgs, err := messageValues(req.Messages)
	if err != nil {
		return "", err
	}
	tools, err := toolValues(req.Tools)
	if err != nil {
		return "", err
	}
	return t.render(msgs, tools, req.AddGenerationPrompt, req.Kwargs)
}

// renderState is what one rendering's globals report back.
type renderState struct{ raised *RaisedError }

func (t *Template) render(msgs, tools []any, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	return t.renderMarked(msgs, tools, addGenerationPrompt, kwargs, false)
}

// renderMarked renders; with marks, {% generation %} blocks write generationOpen and generationClose
// around their output (generation.go).
func (t *Template) renderMarked(msgs, tools []any, addGenerationPrompt bool, kwargs map[string]any, marks bool) (out string, err error) {
	var state renderState
	data := map[string]any{
		"messages":              pyList(msgs),
		"tools":                 nil,
		"documents":             nil,
		"add_generation_prompt": addGenerationPrompt,
		"raise_exception": func(_ *exec.Evaluator, params *exec.VarArgs) (any, error) {
			msg := ""
			if len(params.Args) > 0 {
				msg = params.Args[0].String()
			}
			if state.raised == nil {
				state.raised = &RaisedError{Message: msg}
			}
			return nil, state.raised
		},
		"strftime_now": func(_ *exec.Evaluator, params *exec.VarArgs) (any, error) {
			if len(params.Args) != 1 || !params.Args[0].IsString() {
				return nil, fmt.Errorf("strftime_now takes one format string")
			}
			return strftime(t.now(), params.Args[0].String())
		},
	}
	if tools != nil {
		data["tools"] = pyList(tools)
	}
	if t.bos != "" {
		data["bos_token"] = t.bos
	}
	if t.eos != "" {
		data["eos_token"] = t.eos
	}
	if marks {
		data[generationMarksVar] = true
	}
	for k, v := range kwargs {
		if _, reserved := data[k]; (reserved || k == generationMarksVar) && k != "bos_token" && k != "eos_token" {
			return "", fmt.Errorf("%w: template variable %q is set by the renderer", ErrInvalidInput, k)
		}
		val, err := kwargValue(v)
		if err != nil {
			return "", fmt.Errorf("%w: template variable %q: %v", ErrInvalidInput, k, err)
		}
		data[k] = val
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: rendering panicked: %v", ErrTemplate, r)
		}
	}()
	out, err = t.tpl.ExecuteToString(exec.NewContext(data))
	if err != nil {
		if state.raised != nil {
			return "", state.raised
		}
		return "", fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	return out, nil
}
