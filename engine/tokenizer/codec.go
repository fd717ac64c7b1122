package tokenizer

import "strings"

// Codec is what the engine needs of a tokenizer, met by the byte-level Tokenizer of this package and by
// hf.Tokenizer (Hugging Face tokenizer.json files). Encode treats its input as plain text, so user content
// can never produce a special token; EncodeSpecial also turns the special tokens written in the text into
// their ids, for rendered chat templates. Decode(Encode(s)) == s (for tokenizers that normalize, on
// normalized s; for SentencePiece-style ones, on s without "▁"). TokenBytes may return part of a UTF-8
// sequence (a byte-fallback token is one byte): streaming holds such bytes back. A stream is the
// concatenation of TokenBytes; Decode may differ from it at the start of the text (Llama 2's decoder
// strips the space its normalizer put in front).
type Codec interface {
	VocabSize() int
	Encode(text string) []int
	EncodeSpecial(text string) []int
	Decode(ids []int) string
	TokenBytes(id int) []byte
	IsSpecial(id int) bool
	TokenID(token string) (int, bool)
}

var _ Codec = (*Tokenizer)(nil)

// EncodeSpecial returns the tokens of text with the special tokens named in it (e.g. "<|im_end|>") as their
// ids and everything else as bytes; where two names could match, the longer wins.
func (t *Tokenizer) EncodeSpecial(text string) []int {
	ids := make([]int, 0, len(text))
	for i := 0; i < len(text); {
		if text[i] == '<' {
			best := ""
			for _, name := range specialNames {
				if len(name) > len(best) && strings.HasPrefix(text[i:], name) {
					best = name
				}
			}
			if best != "" {
				ids = append(ids, t.special[best])
				i += len(best)
				continue
			}
		}
		ids = append(ids, int(text[i]))
		i++
	}
	return ids
}

// TokenID returns the id of a special token by name, or of the byte token of a one-byte string.
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if id, ok := t.special[token]; ok {
		return id, true
	}
	if len(token) == 1 {
		return int(token[0]), true
	}
	return 0, false
}
