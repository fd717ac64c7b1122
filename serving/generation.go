package serving

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// Generation is an admitted request, ready to sample. It holds a concurrency slot until Close.
type Generation struct {
	req        Request
	base       *engine.Base
	sampler    *engine.Sampler      // batches the decoding of every request on the same base and adapter
	vocab      func() *grammarVocab // the base's vocabulary for grammars, built on first use
	prompt     []int
	params     engine.SampleParams
	parseTools bool
	thinking   thinking
	release    func()
	started    time.Time // when the request was admitted, for the time to its first token
}

// Close frees the generation's concurrency slot. It is safe to call more than once.
func (g *Generation) Close() {
	if g.release != nil {
		g.release()
	}
}

// Run samples the completions. When emit is not nil, it receives every delta as soon as its tokens are
// final, serialised, in token order per choice; an error from emit (the client went away) stops sampling
// and is returned. Cancelling ctx stops sampling too, between tokens.
func (g *Generation) Run(ctx context.Context, emit func(Delta) error) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tok := g.base.Tokenizer()
	callStart, callEnd, tagged := g.base.ToolCallTokens()
	builders := make([]*choiceBuilder, g.params.N)
	for i := range builders {
		builders[i] = &choiceBuilder{index: i, parseTools: g.parseTools, emit: emit, isSpecial: tok.IsSpecial,
			callStart: callStart, callEnd: callEnd, think: g.thinking, omitReasoning: g.req.OmitReasoning}
		builders[i].startThinking()
		if !tagged {
			builders[i].parseWhole = g.base.ParseToolCalls
		}
	}
	var emitErr error
	first := true
	onToken := func(i int, t engine.SampledToken) {
		if first {
			first = false
			telemetry.ChatFirstToken.Observe(time.Since(g.started).Seconds())
		}
		if emitErr != nil {
			return
		}
		if emitErr = builders[i].push(t); emitErr != nil {
			cancel()
		}
	}
	comps, err := g.sampler.Sample(ctx, g.prompt, g.params, onToken)
	switch {
	case emitErr != nil:
		return nil, emitErr
	case errors.Is(err, engine.ErrContextOverflow):
		return nil, trainyard.WrapError(trainyard.EBADREQUEST, err, "The prompt and max_tokens exceed the model's context length of %d tokens.", g.base.ContextLength())
	case err != nil:
		return nil, fmt.Errorf("sample %s: %w", g.req.Model, err)
	}
	res := &Result{Choices: make([]trainyard.Choice, len(comps)), Usage: Usage{PromptTokens: len(g.prompt)}}
	if len(comps) > 0 {
		res.Usage.CachedPromptTokens = comps[0].CachedPrompt
	}
	for i, c := range comps {
		if res.Choices[i], err = builders[c.Index].finish(c.FinishReason); err != nil {
			return nil, err
		}
		res.Usage.CompletionTokens += len(c.Tokens)
	}
	telemetry.ChatTokens.WithLabelValues("prompt").Add(float64(res.Usage.PromptTokens))
	telemetry.ChatTokens.WithLabelValues("completion").Add(float64(res.Usage.CompletionTokens))
	telemetry.ChatPrefillSaved.Add(float64(res.Usage.CachedPromptTokens))
	return res, nil
}

// constrain installs the sampling constraint the request needs: a forced tool call for tool_choice
// "required" or a named function, else a JSON object for response_format json_object, else, for
// ignore_eos, a ban on the end-of-turn tokens. It refuses a token budget too small for the shortest valid
// output of a grammar, so a constrained choice always finishes complete.
func (g *Generation) constrain() error {
	var gr grammar // over byte tokens
	what := "response_format json_object"
	switch mode := g.req.ToolChoice.Mode; {
	case g.parseTools && (mode == ToolChoiceRequired || mode == ToolChoiceFunction):
		names := []string{g.req.ToolChoice.Name}
		if mode == ToolChoiceRequired {
			names = names[:0]
			for _, t := range g.req.Tools {
				names = append(names, t.Function.Name)
			}
		}
		if callStart, callEnd, ok := g.base.ToolCallTokens(); ok {
			gr = newToolCallGrammar(callStart, callEnd, names, g.req.ParallelToolCalls)
		} else {
			// Llama 3: the whole answer is one {"name", "parameters"} object, which its templates have no
			// way to repeat ("only supports single tool-calls at once"), so a forced choice is one call.
			gr = newJSONCallGrammar(names)
		}
		what = "tool_choice " + mode
	case g.req.JSONObject:
		gr = jsonGrammar{}
	case g.req.IgnoreEOS:
		ban := eosBan(g.base.StopTokens())
		g.params.Constraint = func(int) engine.Constraint { return ban }
		return nil
	default:
		return nil
	}
	var m masker = onTokens(gr, g.vocab())
	if th := g.thinking; th.on {
		// The structured output comes after the reasoning, as in vLLM: the model may open a think block
		// first (Qwen3 does), or is in one the prompt opened, and the grammar applies after </think>.
		phase := reasonOptional
		if th.inside {
			phase = reasonInside
		}
		m = afterReasoning{start: th.start, end: th.end, g: m, phase: phase}
	}
	budget := g.base.ContextLength() - len(g.prompt)
	if g.req.MaxTokens > 0 {
		budget = min(budget, g.req.MaxTokens)
	}
	if need := minBudget(m); budget < need {
		return trainyard.Errorf(trainyard.EBADREQUEST,
			"%s needs at least %d completion tokens, but only %d are available: raise max_tokens or shorten the messages.",
			what, need, budget)
	}
	stops := g.base.StopTokens()
	g.params.Constraint = func(int) engine.Constraint { return newConstraint(m, budget, stops) }
	return nil
}

// thinking says how the output of a generation is read for reasoning.
type thinking struct {
	on         bool // the model marks reasoning with think tokens, and the request did not turn thinking off
	start, end int  // <think> and </think>
	inside     bool // the prompt opened a think block, so the output starts in it
}

// reasoningOf finds whether base reasons in think blocks (its tokenizer has the tokens), whether the
// request turned that off (chat_template_kwargs enable_thinking false, which Qwen3's template answers
// with an empty block in the prompt), and whether the prompt's last think marker is an opening one: some
// templates end the generation prompt with "<think>\n", and the model then starts inside the block.
func reasoningOf(base *engine.Base, req Request, prompt []int) thinking {
	start, end, ok := base.ThinkTokens()
	if !ok {
		return thinking{start: -1, end: -1}
	}
	if on, set := req.TemplateKwargs["enable_thinking"].(bool); set && !on {
		return thinking{start: -1, end: -1}
	}
	th := thinking{on: true, start: start, end: end}
	for i := len(prompt) - 1; i >= 0; i-- {
		switch prompt[i] {
		case start:
			th.inside = true
			return th
		case end:
			return th
		}
	}
	return th
}
