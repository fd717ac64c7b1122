// Package tokenizer implements the engine's byte-level tokenizer: ids 0..255 are the raw bytes and the ids
// above them are special tokens (chat-turn markers, tool-call delimiters, end of text). Byte-level means every
// string encodes losslessly and no merge table has to be trained or shipped with the built-in models.
package tokenizer

import (
	"fmt"
	"strings"
)

// Names of the special tokens, in id order after the 256 byte tokens. Their text form is what Decode writes
// for them, so a decoded completion shows "<tool_call>" where the model emitted the special token.
const (
	EndOfText     = "<|endoftext|>"
	TurnStart     = "<|im_start|>"
	TurnEnd       = "<|im_end|>"
	ToolCallStart = "<tool_call>"
	ToolCallEnd   = "</tool_call>"
	Pad           = "<|pad|>"
)

// specialNames lists the special tokens in id order; two reserved slots keep the vocabulary at 264 so later
// additions do not change the embedding shape of existing checkpoints.
var specialNames = []string{EndOfText, TurnStart, TurnEnd, ToolCallStart, ToolCallEnd, Pad,
	"<|reserved_0|>", "<|reserved_1|>"}

// VocabSize is the number of token ids of the byte-level tokenizer.
var VocabSize = 256 + len(specialNames)

// Tokenizer maps text to token ids and back. It is immutable and safe for concurrent use.
type Tokenizer struct {
	special map[string]int
	text    [][]byte // bytes of every id, specials as their names
}

// New returns the byte-level tokenizer.
func New() *Tokenizer {
	t := &Tokenizer{special: map[string]int{}, text: make([][]byte, VocabSize)}
	for i := 0; i < 256; i++ {
		t.text[i] = []byte{byte(i)}
	}
	for i, name := range specialNames {
		t.special[name] = 256 + i
		t.text[256+i] = []byte(name)
	}
	return t
}

// VocabSize returns the number of token ids.
func (t *Tokenizer) VocabSize() int { return len(t.text) }

// Encode returns the byte tokens of text. Text that merely looks like a special token stays plain bytes, so
// user content can never forge chat-turn markers.
func (t *Tokenizer) Encode(text string) []int {
	ids := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int(text[i])
	}
	return ids
}

// Special returns the id of the named special token (e.g. TurnEnd); it panics on an unknown name because the
// names are compile-time constants of this package.
func (t *Tokenizer) Special(name string) int {
	id, ok := t.special[name]
	if !ok {
		panic(fmt.Sprintf("tokenizer: unknown special token %q", name))
	}
	return id
}

// IsSpecial reports whether id is a special token.
func (t *Tokenizer) IsSpecial(id int) bool { return id >= 256 && id < len(t.text) }

// TokenBytes returns the bytes of one token (a special token's name for specials); nil when out of range.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.text) {
		return nil
	}
	return t.text[id]
}

// Decode returns the text of ids, special tokens written as their names. Invalid UTF-8 produced by a
// partial multi-byte sequence is kept as is (Go strings hold arbitrary bytes).
func (t *Tokenizer) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.Write(t.TokenBytes(id))
	}
	return b.String()
}

// StopTokens returns the ids that end a generated assistant turn.
func (t *Tokenizer) StopTokens() []int {
	return []int{t.special[TurnEnd], t.special[EndOfText]}
}
