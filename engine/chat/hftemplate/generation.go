package hftemplate

import (
	"fmt"
	"strings"
)

// A template that wraps assistant output in {% generation %} blocks says itself what is trained: the
// tokens inside them are transformers' assistant mask (return_assistant_tokens_mask). RenderTraining
// renders the conversation once more with the blocks' output between two private-use characters and
// trains exactly that text of each trainable turn.
const (
	generationMarksVar = "__trainyard_generation_marks" // set in the render's context to ask for marks
	generationOpen     = "\ue001"
	generationClose    = "\ue002"
)

// generationSpans returns the byte ranges of full that {% generation %} blocks wrote, merged where
// adjacent; nil when the template has none in this conversation.
func (t *Template) generationSpans(msgs, tools []any, kwargs map[string]any, full string) ([][2]int, error) {
	marked, err := t.renderMarked(msgs, tools, false, kwargs, true)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(marked, generationOpen) {
		return nil, nil
	}
	var spans [][2]int
	var plain strings.Builder
	open := -1
	for k := 0; k < len(marked); {
		switch {
		case strings.HasPrefix(marked[k:], generationOpen):
			if open >= 0 {
				return nil, fmt.Errorf("{%% generation %%} blocks are nested")
			}
			open = plain.Len()
			k += len(generationOpen)
		case strings.HasPrefix(marked[k:], generationClose):
			if open < 0 {
				return nil, fmt.Errorf("the conversation holds the character U+E002, which marks {%% generation %%} blocks")
			}
			if n := len(spans); n > 0 && spans[n-1][1] == open {
				spans[n-1][1] = plain.Len()
			} else if plain.Len() > open {
				spans = append(spans, [2]int{open, plain.Len()})
			}
			open = -1
			k += len(generationClose)
		default:
			plain.WriteByte(marked[k])
			k++
		}
	}
	if open >= 0 || plain.String() != full {
		return nil, fmt.Errorf("the conversation holds the characters U+E001 or U+E002, which mark {%% generation %%} blocks")
	}
	return spans, nil
}

// located is where a turn of a Training sits in its text: its header starts at start, its trainable text
// (Rendered, then End) at body.
type located struct{ start, body int }

// useGenerationSpans rebuilds tr's segments so that each trainable turn trains the text of the
// {% generation %} block that overlaps it: its Rendered text, then whatever else the block holds (the
// end marker, a newline) as End when the block starts where the turn does; else the block's text alone,
// which sampled ids no longer stand for.
func (tr *Training) useGenerationSpans(spans [][2]int, at []located) error {
	full := tr.Text
	tr.Segments = nil
	pos := 0
	for k := range tr.Turns {
		turn := &tr.Turns[k]
		s, e := at[k].body, at[k].body+len(turn.Rendered)+len(turn.End)
		var hit [][2]int
		for _, sp := range spans {
			if sp[0] < e && sp[1] > s || (s == e && sp[0] <= s && s < sp[1]) {
				hit = append(hit, sp)
			}
		}
		switch {
		case len(hit) == 0:
			return fmt.Errorf("message %d: the template's {%% generation %%} blocks do not hold it", turn.Message)
		case len(hit) > 1:
			return fmt.Errorf("message %d: the template writes it in several {%% generation %%} blocks with text between them", turn.Message)
		case hit[0][0] < pos:
			return fmt.Errorf("message %d: its {%% generation %%} block also holds the turn before it", turn.Message)
		}
		a, b := hit[0][0], hit[0][1]
		if a >= at[k].start {
			h := max(pos, at[k].start) // the block before may have run into this turn's header
			tr.add(full[pos:h], false, -1)
			tr.add(full[h:a], false, turn.Message)
		} else {
			tr.add(full[pos:a], false, -1)
		}
		if a == s && b >= s+len(turn.Rendered) {
			turn.End = full[s+len(turn.Rendered) : b]
		} else {
			turn.Rendered, turn.End, turn.AsGenerated = full[a:b], "", false
		}
		tr.add(turn.Rendered, true, turn.Message)
		tr.add(turn.End, true, turn.Message)
		pos = b
	}
	tr.add(full[pos:], false, -1)
	return nil
}
