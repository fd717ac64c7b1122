package hftemplate

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// ErrMask reports a conversation whose trainable turns cannot be located in its rendering with
// certainty. It is never answered with a guessed mask.
var ErrMask = errors.New("cannot mark the trainable turns of this conversation")

// Segment is a piece of a rendered conversation. The segments of a Training concatenate to the full
// rendering, byte for byte.
type Segment struct {
	Text      string
	Trainable bool
	// Message is the index of the assistant message whose header, output or end-of-turn marker this is;
	// -1 for the rest (system, user and tool turns, the newline after a marker, template preambles).
	Message int
}

// Turn is one trainable assistant message as located in the rendering.
type Turn struct {
	Message int
	// Generated is what the model produced for this turn, as the template writes it when the turn is the
	// last one: content, reasoning and tool calls, without the end-of-turn marker. This is the text
	// sampled token ids stand for.
	Generated string
	// End is the end-of-turn marker (<|im_end|>, <|eot_id|>, ...) the template closes the turn with.
	End string
	// Rendered is the turn's trainable text in the full rendering: Generated itself, or the end of it
	// when the template shortens earlier turns (Qwen3 drops their reasoning).
	Rendered string
	// AsGenerated says Rendered == Generated, so sampled token ids can stand for the segment; otherwise
	// the text must be encoded and its sampling logprobs do not apply.
	AsGenerated bool
}

// Training is a conversation rendered for training.
type Training struct {
	Text     string
	Segments []Segment
	Turns    []Turn
}

// defaultEndMarkers close assistant turns in the common template families (<|return|> and <|call|> are
// gpt-oss's); the config's eos_token is tried too.
var defaultEndMarkers = []string{"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>",
	"<|endoftext|>", "<|end_of_text|>", "</s>", "<|return|>", "<|call|>"}

// RenderTraining renders a complete conversation (no generation prompt, whatever req says) and marks the
// output of every assistant message flagged Trainable: its content, reasoning and tool calls as the
// template writes them and its end-of-turn marker, but not its header nor what follows the marker.
//
// Nothing is assumed about how a template frames a turn; each trainable turn i is read off renderings of
// prefixes of the conversation, as the model met them:
//   - the prompt is Render(messages[:i]) with the generation prompt, which is what the model was sampled
//     from, and Render(messages[:i+1]) must continue it: what it adds is the turn, then whatever the
//     template writes after a last message (a newline, or a generation prompt it always appends);
//   - the same prefix ending in a bare assistant message whose content is a sentinel character shows what
//     the template writes after a turn's content: the longest common ending of the two renderings is that
//     closing text (or its end, when a turn with tool calls closes differently), so the turn's own text is
//     what comes before it, whether the template trims it, adds nothing after it or always appends a
//     generation prompt;
//   - the end-of-turn marker is the first stop marker (<|im_end|>, <|eot_id|>, eos_token, ...) that ends
//     inside that closing text, as sampling stops at the first stop token; a template that closes turns
//     with a newline or nothing has no marker, and the turn is its text alone.
//
// The turn is then found in the full rendering, either exactly as generated or, for templates that
// rewrite earlier turns, as a header that begins the generation prompt followed by an end of the
// generated text and the same marker (Qwen3 keeps only the answer of turns before the last user
// message, and drops the empty <think></think> of turns that are not last). Anything else is ErrMask,
// naming what the template does that keeps the turn from being located. A template with
// {% generation %} blocks has the last word on what each located turn trains (generation.go).
func (t *Template) RenderTraining(req Request) (*Training, error) {
	msgs, err := messageValues(req.Messages)
	if err != nil {
		return nil, err
	}
	tools, err := toolValues(req.Tools)
	if err != nil {
		return nil, err
	}
	render := func(n int, gen bool) (string, error) { return t.render(msgs[:n], tools, gen, req.Kwargs) }
	full, err := render(len(msgs), false)
	if err != nil {
		return nil, err
	}
	tr := &Training{Text: full}
	markers := t.endMarkers()
	pos := 0       // the part of full already segmented
	prevTurn := "" // Render(messages[:j+1]) of the previous trainable turn j
	var at []located
	for i, m := range req.Messages {
		if !m.Trainable {
			continue
		}
		if m.Role != "assistant" {
			return nil, fmt.Errorf("%w: message %d is trainable but is a %s message", ErrInvalidInput, i, m.Role)
		}
		if i == 0 {
			return nil, fmt.Errorf("%w: message 0 is an assistant turn with no prompt before it", ErrMask)
		}
		before, err := render(i, false)
		if err != nil {
			return nil, fmt.Errorf("message %d: rendering the conversation before it: %w", i, err)
		}
		prompt, err := render(i, true)
		if err != nil {
			return nil, fmt.Errorf("message %d: rendering its prompt: %w", i, err)
		}
		through, err := render(i+1, false)
		if err != nil {
			return nil, fmt.Errorf("message %d: rendering the conversation through it: %w", i, err)
		}
		if !strings.HasPrefix(prompt, before) {
			return nil, fmt.Errorf("%w: message %d: the template's generation prompt rewrites the conversation before it instead of following it", ErrMask, i)
		}
		if !strings.HasPrefix(through, prompt) {
			return nil, fmt.Errorf("%w: message %d: the template writes an assistant turn that ends the conversation differently from its generation prompt %q", ErrMask, i, prompt[len(before):])
		}
		bare, err := t.render(append(msgs[:i:i], dict("role", "assistant", "content", probeContent)), tools, false, req.Kwargs)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: the template refuses a plain assistant message in its place: %v", ErrMask, i, err)
		}
		generated, end, err := splitTurn(through[len(prompt):], bare, prompt, markers)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrMask, i, err)
		}
		header := prompt[len(before):]
		start, err := turnStart(full, before, prevTurn, pos)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrMask, i, err)
		}
		probeHeader := func() (string, error) {
			probe := append([]any(nil), msgs...)
			probe[i] = dict("role", "assistant", "content", probeContent)
			text, err := t.render(probe, tools, false, req.Kwargs)
			if err != nil {
				return "", err
			}
			at := strings.Index(text[min(start, len(text)):], probeContent)
			if !strings.HasPrefix(text, full[:start]) || at < 0 {
				return "", fmt.Errorf("the template renders a bare assistant message at this place differently")
			}
			return text[start : start+at], nil
		}
		headerLen, rendered, err := locateTurn(full, start, header, generated, end, probeHeader)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrMask, i, err)
		}
		tr.add(full[pos:start], false, -1)
		tr.add(full[start:start+headerLen], false, i)
		tr.add(rendered, true, i)
		tr.add(end, true, i)
		tr.Turns = append(tr.Turns, Turn{Message: i, Generated: generated, End: end, Rendered: rendered, AsGenerated: rendered == generated})
		at = append(at, located{start: start, body: start + headerLen})
		pos = start + headerLen + len(rendered) + len(end)
		prevTurn = through
	}
	tr.add(full[pos:], false, -1)
	if len(tr.Turns) == 0 {
		return tr, nil
	}
	spans, err := t.generationSpans(msgs, tools, req.Kwargs, full)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMask, err)
	}
	if spans != nil {
		if err := tr.useGenerationSpans(spans, at); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMask, err)
		}
	}
	return tr, nil
}

func (tr *Training) add(text string, trainable bool, msg int) {
	if text != "" || trainable {
		tr.Segments = append(tr.Segments, Segment{Text: text, Trainable: trainable, Message: msg})
	}
}

func (t *Template) endMarkers() []string {
	markers := append([]string(nil), defaultEndMarkers...)
	if t.eos != "" && indexOf(markers, t.eos) < 0 {
		markers = append(markers, t.eos)
	}
	sort.SliceStable(markers, func(i, j int) bool { return len(markers[i]) > len(markers[j]) })
	return markers
}

// splitTurn splits rest, what a conversation ending in the turn adds to the turn's prompt, into the
// generated text and its end-of-turn marker. bare is the same conversation with a plain assistant message
// whose content is probeContent in the turn's place: what follows the probe there is the template's
// closing text, and the turn's text ends where rest stops sharing its ending with it.
func splitTurn(rest, bare, prompt string, markers []string) (generated, end string, err error) {
	if !strings.HasPrefix(bare, prompt) {
		return "", "", fmt.Errorf("the template writes a plain assistant message after this prompt differently from the turn (it depends on the message's content or tool calls)")
	}
	at := strings.Index(bare[len(prompt):], probeContent)
	if at < 0 {
		return "", "", fmt.Errorf("the template does not write the content of an assistant message at the end of a conversation")
	}
	closing := bare[len(prompt)+at+len(probeContent):]
	d := len(rest) - commonSuffix(rest, closing) // rest[:d] is the turn's own text
	for d < len(rest) && !utf8.RuneStart(rest[d]) {
		d++ // the shared ending began inside a character: the character is the turn's
	}
	// The turn ends with the first stop marker that ends inside the closing text (one the template
	// writes, not one the turn's content happens to hold), as sampling stops at the first stop token;
	// whatever the closing writes before that marker is generated too.
	first := -1
	for _, m := range markers {
		from := max(0, d-len(m)+1)
		if k := strings.Index(rest[from:], m); k >= 0 && (first < 0 || from+k < first) {
			first, end = from+k, m
		}
	}
	if first >= 0 {
		return rest[:first], end, nil
	}
	// No marker (a template that ends turns with a newline or nothing, or with a marker only after tool
	// calls, which a plain message's closing does not share): the turn is its own text.
	own := rest[:d]
	for _, m := range markers {
		if strings.HasSuffix(own, m) {
			return own[:len(own)-len(m)], m, nil
		}
	}
	return own, "", nil
}

func commonSuffix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// turnStart finds where the turn's header begins in full: right after the conversation before it when
// that renders as a prefix of full, else right after the previous trainable turn and what the
// conversation added between the two turns.
func turnStart(full, before, prevTurn string, pos int) (int, error) {
	if strings.HasPrefix(full, before) && len(before) >= pos {
		return len(before), nil
	}
	if prevTurn != "" && strings.HasPrefix(before, prevTurn) {
		between := before[len(prevTurn):]
		if strings.HasPrefix(full[pos:], between) {
			return pos + len(between), nil
		}
	}
	return 0, fmt.Errorf("the conversation before it renders differently in the full conversation")
}

// probeContent stands for an assistant message's content when the header the template writes before
// the content is looked for: a private-use character no template treats specially.
const probeContent = "\ue000"

// locateTurn reads the turn at full[start:]: the length of its header and the trainable text before the
// end marker. probeHeader renders the conversation with the turn replaced by a bare assistant message
// and returns the header written before its content; it is needed only when the turn was rewritten.
func locateTurn(full string, start int, header, generated, end string, probeHeader func() (string, error)) (int, string, error) {
	text := full[start:]
	if strings.HasPrefix(text, header+generated+end) {
		return len(header), generated, nil
	}
	// Rewritten: the template's bare header (a beginning of the generation prompt), then an end of the
	// generated text, then the marker.
	bare, err := probeHeader()
	if err != nil {
		return 0, "", err
	}
	if !strings.HasPrefix(header, bare) || !strings.HasPrefix(text, bare) {
		return 0, "", fmt.Errorf("its header %q is not the start of the generation prompt %q", bare, header)
	}
	body := text[len(bare):]
	found, at := 0, -1
	for e := 0; e <= len(generated) && e+len(end) <= len(body); e++ {
		if strings.HasPrefix(body[e:], end) && strings.HasSuffix(generated, body[:e]) {
			found++
			at = e
		}
	}
	switch {
	case found == 0:
		return 0, "", fmt.Errorf("the full conversation renders it neither as generated nor as an end of the generated text")
	case found > 1:
		return 0, "", fmt.Errorf("its end-of-turn marker also occurs inside its text, so where it ends is ambiguous")
	}
	return len(bare), body[:at], nil
}
