package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/engine/sample"
	"github.com/trainyard/trainyard/engine/tokenizer"
	"github.com/trainyard/trainyard/engine/zoo"
)

// Base is a frozen base model with its tokenizer and chat template. It is safe for concurrent use:
// sampling from many goroutines, with different adapters at once; its weights never change after loading.
type Base struct {
	name string
	w    *model.Weights
	tok  *tokenizer.Tokenizer
	tmpl *chat.Template
}

// BuiltinNames lists the models OpenBuiltin knows, e.g. "trainyard/tiny-chat".
func BuiltinNames() []string { return zoo.Names() }

// builtins caches loaded built-in models: a Base is immutable, so every caller can share one copy.
var builtins sync.Map // name → *Base

// OpenBuiltin loads a built-in model from the weights embedded in the binary (once per process; later
// calls return the same *Base).
func OpenBuiltin(name string) (*Base, error) {
	if b, ok := builtins.Load(name); ok {
		return b.(*Base), nil
	}
	cfgJSON, weights, err := zoo.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	b, err := load(name, cfgJSON, [][]byte{weights})
	if err != nil {
		return nil, err
	}
	actual, _ := builtins.LoadOrStore(name, b)
	return actual.(*Base), nil
}

// OpenDir loads a Llama-architecture checkpoint from dir: config.json and model.safetensors, or the shards
// listed in model.safetensors.index.json. The engine's byte-level tokenizer is used, so the checkpoint's
// vocabulary must be laid out as bytes 0..255 followed by the special tokens (as trainyard's own models
// are); the name is the directory's base name.
func OpenDir(dir string) (*Base, error) {
	cfgJSON, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	files := []string{"model.safetensors"}
	if idx, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json")); err == nil {
		var index struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(idx, &index); err != nil {
			return nil, fmt.Errorf("%w: model.safetensors.index.json: %v", ErrInvalidInput, err)
		}
		seen := map[string]bool{}
		files = files[:0]
		for _, f := range index.WeightMap {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
		sort.Strings(files)
	}
	var blobs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.Clean("/" + f)[1:]))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
		}
		blobs = append(blobs, b)
	}
	return load(filepath.Base(dir), cfgJSON, blobs)
}

func load(name string, cfgJSON []byte, blobs [][]byte) (*Base, error) {
	cfg, err := model.ParseHFConfig(cfgJSON)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	tok := tokenizer.New()
	if cfg.VocabSize < tok.VocabSize() {
		return nil, fmt.Errorf("%w: vocabulary of %d is smaller than the byte tokenizer's %d", ErrInvalidInput, cfg.VocabSize, tok.VocabSize())
	}
	tensors := map[string]safetensors.Tensor{}
	for _, b := range blobs {
		f, err := safetensors.Read(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
		}
		for k, v := range f.Tensors {
			tensors[k] = v
		}
	}
	w, err := model.LoadWeights(cfg, tensors)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return &Base{name: name, w: w, tok: tok, tmpl: chat.NewTemplate(tok)}, nil
}

// Name is the model's name (e.g. "trainyard/tiny-chat").
func (b *Base) Name() string { return b.name }

// RecommendedLearningRates returns the learning rates LoRA training of a built-in model is known to work
// at, for RL and for SFT; ok is false for a model opened with OpenDir (whose name, a directory's base name,
// is never a built-in name), which has no recommendation.
func (b *Base) RecommendedLearningRates() (rl, sft float64, ok bool) {
	return zoo.LearningRates(b.name)
}

// ContextLength is the maximum number of tokens of a sequence (prompt plus completion).
func (b *Base) ContextLength() int { return b.w.Cfg.MaxSeqLen }

// NumParams is the number of base-model parameters.
func (b *Base) NumParams() int { return b.w.Cfg.NumParams() }

// Tokenizer returns the model's tokenizer.
func (b *Base) Tokenizer() *tokenizer.Tokenizer { return b.tok }

// RenderPrompt renders msgs (and tools, into the system turn) followed by the assistant header, ready for
// Sample.
func (b *Base) RenderPrompt(msgs []Message, tools []Tool) ([]int, error) {
	ids, err := b.tmpl.RenderPrompt(msgs, tools)
	return ids, wrapInput(err)
}

// RenderTraining renders a conversation as a training sequence; assistant turns with Trainable set get
// loss on their tokens and their closing <|im_end|>.
func (b *Base) RenderTraining(msgs []Message, tools []Tool) (Sequence, error) {
	s, err := b.tmpl.RenderTraining(msgs, tools)
	return s, wrapInput(err)
}

// Sample generates p.N completions of prompt from the base model plus adapter a (nil = base only). onToken
// (may be nil) is called for each token as soon as it is final (tokens that might start a stop sequence
// are held back), serialised on the calling goroutine. The same seed and inputs give the same completions
// whatever else runs concurrently. Cancelling ctx returns ctx.Err().
func (b *Base) Sample(ctx context.Context, a *Adapter, prompt []int, p SampleParams,
	onToken func(index int, t SampledToken)) ([]Completion, error) {
	lora, err := b.loraOf(a)
	if err != nil {
		return nil, err
	}
	return sampleResult(sample.Run(ctx, b.w, lora, b.tok, prompt, p, onToken))
}

// loraOf returns the LoRA weights of adapter a (nil for nil), which must belong to b.
func (b *Base) loraOf(a *Adapter) (*model.LoRA, error) {
	if a == nil {
		return nil, nil
	}
	if err := a.checkBase(b); err != nil {
		return nil, err
	}
	return a.lora, nil
}

// sampleResult marks the sampler's parameter and input errors as invalid input.
func sampleResult(out []Completion, err error) ([]Completion, error) {
	if errors.Is(err, sample.ErrInvalidParams) || errors.Is(err, model.ErrInput) {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return out, err
}

// wrapInput marks template errors as invalid input.
func wrapInput(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", ErrInvalidInput, err)
}
