package engine

import (
	"fmt"

	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// NewRandomBase returns a base model of the architecture config.json describes with random weights
// (N(0, 0.02) matrices, unit norm gains) held in bfloat16 as OpenDir holds a checkpoint, and the byte
// tokenizer: a real model's shape and memory without its weights, for benchmarks and measurements.
func NewRandomBase(name string, configJSON []byte, seed int64) (*Base, error) {
	cfg, err := model.ParseHFConfig(configJSON)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	tok := tokenizer.New()
	if cfg.VocabSize < tok.VocabSize() {
		return nil, fmt.Errorf("%w: vocabulary of %d is smaller than the byte tokenizer's %d", ErrInvalidInput, cfg.VocabSize, tok.VocabSize())
	}
	w, err := model.NewRandomWeights(cfg, model.BF16, seed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	w.Pack()
	return &Base{name: name, w: w, tok: tok, tmpl: chat.NewTemplate(tok), thinkStart: -1, thinkEnd: -1, shared: &baseShared{}}, nil
}
