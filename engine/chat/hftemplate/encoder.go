package hftemplate

import (
	"fmt"
	"math"

	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// Encoder renders conversations with a template and encodes them with the model's tokenizer: the
// chat.Renderer of a Hugging Face model. Rendered text goes through EncodeSpecial, as transformers'
// apply_chat_template(tokenize=True) does, so the template's markers become their token ids.
type Encoder struct {
	tpl *Template
	tok tokenizer.Codec
}

var (
	_ chat.Renderer       = (*Encoder)(nil)
	_ chat.KwargsRenderer = (*Encoder)(nil)
)

// NewEncoder pairs a template with the tokenizer its model was trained with.
func NewEncoder(tpl *Template, tok tokenizer.Codec) *Encoder { return &Encoder{tpl: tpl, tok: tok} }

// RenderPrompt renders msgs with the generation prompt and encodes the text.
func (e *Encoder) RenderPrompt(msgs []chat.Message, tools []chat.Tool) ([]int, error) {
	text, err := e.tpl.Render(Request{Messages: msgs, Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		return nil, err
	}
	return e.tok.EncodeSpecial(text), nil
}

// RenderPromptKwargs is RenderPrompt with extra template variables (enable_thinking, ...).
func (e *Encoder) RenderPromptKwargs(msgs []chat.Message, tools []chat.Tool, kwargs map[string]any) ([]int, error) {
	text, err := e.tpl.Render(Request{Messages: msgs, Tools: tools, AddGenerationPrompt: true, Kwargs: kwargs})
	if err != nil {
		return nil, err
	}
	return e.tok.EncodeSpecial(text), nil
}

// RenderTraining renders the conversation with RenderTraining's segments and encodes each one apart, so
// the trainable ids are exactly those of the assistant output and its end-of-turn marker. A trainable turn
// that carries the ids it was sampled as (Message.Tokens) contributes those ids and their logprobs when
// the template writes the turn as it was generated; when the template rewrites it (Qwen3 drops the
// reasoning of earlier turns), the rewritten text is encoded and its sampling logprobs are unknown (NaN).
func (e *Encoder) RenderTraining(msgs []chat.Message, tools []chat.Tool) (chat.Sequence, error) {
	tr, err := e.tpl.RenderTraining(Request{Messages: msgs, Tools: tools})
	if err != nil {
		return chat.Sequence{}, err
	}
	asGenerated := map[int]bool{}
	for _, turn := range tr.Turns {
		asGenerated[turn.Message] = turn.AsGenerated
	}
	var seq chat.Sequence
	add := func(ids []int, trainable bool, logprobs []float32) {
		nan := float32(math.NaN())
		for i, id := range ids {
			lp := nan
			if logprobs != nil {
				lp = logprobs[i]
			}
			seq.Tokens = append(seq.Tokens, id)
			seq.Trainable = append(seq.Trainable, trainable)
			seq.OldLogprobs = append(seq.OldLogprobs, lp)
		}
	}
	bodyDone := map[int]bool{} // a trainable turn is two segments: its output, then its end marker
	for _, s := range tr.Segments {
		if !s.Trainable {
			add(e.tok.EncodeSpecial(s.Text), false, nil)
			continue
		}
		if bodyDone[s.Message] {
			add(e.tok.EncodeSpecial(s.Text), true, nil)
			continue
		}
		bodyDone[s.Message] = true
		m := msgs[s.Message]
		if m.Tokens == nil || !asGenerated[s.Message] {
			add(e.tok.EncodeSpecial(s.Text), true, nil)
			continue
		}
		if m.Logprobs != nil && len(m.Logprobs) != len(m.Tokens) {
			return chat.Sequence{}, fmt.Errorf("%w: message %d has %d logprobs for %d tokens", ErrInvalidInput,
				s.Message, len(m.Logprobs), len(m.Tokens))
		}
		add(m.Tokens, true, m.Logprobs)
	}
	return seq, nil
}
