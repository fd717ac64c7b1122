package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
	name  string
	w     *model.Weights
	tok   tokenizer.Codec
	stops []int
	tmpl  chat.Renderer
	// callStart and callEnd are the tokens that open and close a tool call (<tool_call>, </tool_call>);
	// -1 when the model writes its calls as bare JSON (Llama 3).
	callStart, callEnd int
	// thinkStart and thinkEnd are the tokens that open and close a reasoning block (<think>, </think>);
	// -1 when the tokenizer has none.
	thinkStart, thinkEnd int
	// lr are the recommended learning rates (RL, SFT); ok is false when there are none.
	lrRL, lrSFT float64
	lrOK        bool
	// shared holds what the base's samplers and trainers share (NewSampler, NewTrainer).
	shared *baseShared
}

// baseShared is the batch that decodes the chat requests of every adapter of a base together, made on
// first use, and the working memory the base's last closed trainer left (Trainer.Close).
type baseShared struct {
	once  sync.Once
	batch *sample.Batcher

	spareMu sync.Mutex
	spare   *passMemory
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
	cfg, err := model.ParseHFConfig(cfgJSON)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	// The built-in model is small (13 MB) and was pretrained and tuned in float32: keep it exact.
	f, err := safetensors.Parse(weights) // views of the embedded bytes, converted once by loadWeights
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	w, err := loadWeights(cfg, []*safetensors.File{f}, model.F32)
	if err != nil {
		return nil, err
	}
	b, err := byteLevelBase(name, w)
	if err != nil {
		return nil, err
	}
	b.lrRL, b.lrSFT, b.lrOK = zoo.LearningRates(name)
	actual, _ := builtins.LoadOrStore(name, b)
	return actual.(*Base), nil
}

// byteLevelBase pairs weights with the engine's byte-level tokenizer and built-in ChatML template.
func byteLevelBase(name string, w *model.Weights) (*Base, error) {
	tok := tokenizer.New()
	if w.Cfg.VocabSize < tok.VocabSize() {
		return nil, fmt.Errorf("%w: vocabulary of %d is smaller than the byte tokenizer's %d", ErrInvalidInput, w.Cfg.VocabSize, tok.VocabSize())
	}
	return &Base{name: name, w: w, tok: tok, stops: tok.StopTokens(), tmpl: chat.NewTemplate(tok), shared: &baseShared{},
		callStart: tok.Special(tokenizer.ToolCallStart), callEnd: tok.Special(tokenizer.ToolCallEnd),
		thinkStart: -1, thinkEnd: -1}, nil
}

// OpenDir loads the model directory dir under the name of its base name; see OpenSnapshot.
func OpenDir(dir string) (*Base, error) { return OpenSnapshot(filepath.Base(dir), dir) }

// loadWeights converts the tensors of the safetensors files into weights for cfg, its matrices held as
// dtype.
func loadWeights(cfg model.Config, files []*safetensors.File, dtype model.DType) (*model.Weights, error) {
	tensors := map[string]safetensors.Tensor{}
	for _, f := range files {
		for k, v := range f.Tensors {
			tensors[k] = v
		}
	}
	w, err := model.LoadWeights(cfg, tensors, dtype)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return w, nil
}

// Name is the model's name (e.g. "trainyard/tiny-chat").
func (b *Base) Name() string { return b.name }

// RecommendedLearningRates returns the learning rates LoRA training of a built-in model is known to work
// at, for RL and for SFT; ok is false for a model opened from a directory, which has no recommendation
// (jobs then use the service's defaults).
func (b *Base) RecommendedLearningRates() (rl, sft float64, ok bool) {
	return b.lrRL, b.lrSFT, b.lrOK
}

// ContextLength is the maximum number of tokens of a sequence (prompt plus completion).
func (b *Base) ContextLength() int { return b.w.Cfg.MaxSeqLen }

// KVBytesPerToken is the memory one position of a sequence takes in a decoding cache: a float32 key and
// value per layer.
func (b *Base) KVBytesPerToken() int64 { return int64(b.w.Cfg.Layers) * 2 * int64(b.w.Cfg.KVDim()) * 4 }

// NumParams is the number of base-model parameters.
func (b *Base) NumParams() int { return b.w.Cfg.NumParams() }

// Tokenizer returns the model's tokenizer.
func (b *Base) Tokenizer() tokenizer.Codec { return b.tok }

// StopTokens returns the ids that end a generated assistant turn.
func (b *Base) StopTokens() []int { return b.stops }

// TokenBytes returns the bytes of token id (nil for an id no token has); with StopTokens it is what the
// sampler reads of the tokenizer.
func (b *Base) TokenBytes(id int) []byte { return b.tok.TokenBytes(id) }

// ToolCallTokens returns the tokens that open and close a tool call (Qwen's and the built-in models'
// <tool_call> and </tool_call>); ok is false for a model that writes a call as bare JSON (Llama 3).
func (b *Base) ToolCallTokens() (start, end int, ok bool) {
	return b.callStart, b.callEnd, b.callStart >= 0 && b.callEnd >= 0
}

// ThinkTokens returns the tokens that open and close a reasoning block (<think> and </think>, added tokens
// of Qwen3's and DeepSeek-R1-style tokenizers); ok is false for a model without them, whose output has no
// reasoning to separate. It is read from the tokenizer, never from the model's name.
func (b *Base) ThinkTokens() (start, end int, ok bool) {
	return b.thinkStart, b.thinkEnd, b.thinkStart >= 0 && b.thinkEnd >= 0
}

// ParseToolCalls reads the tool calls of a completion's text in the model's format: <tool_call> blocks,
// or for a model without those tokens one JSON object {"name", "parameters"} making up the whole answer.
// It returns the remaining content and the calls (ids call_0, call_1, ...).
func (b *Base) ParseToolCalls(text string) (string, []ToolCall) {
	if _, _, ok := b.ToolCallTokens(); ok {
		return chat.ParseToolCalls(text)
	}
	return chat.ParseJSONToolCall(text)
}

// RenderPrompt renders msgs (and tools, into the system turn) followed by the assistant header, ready for
// Sample.
func (b *Base) RenderPrompt(msgs []Message, tools []Tool) ([]int, error) {
	ids, err := b.tmpl.RenderPrompt(msgs, tools)
	return ids, wrapInput(err)
}

// RenderPromptKwargs is RenderPrompt with extra template variables (chat_template_kwargs, e.g.
// enable_thinking). The built-in template has no variables and ignores them.
func (b *Base) RenderPromptKwargs(msgs []Message, tools []Tool, kwargs map[string]any) ([]int, error) {
	r, ok := b.tmpl.(chat.KwargsRenderer)
	if !ok || len(kwargs) == 0 {
		return b.RenderPrompt(msgs, tools)
	}
	ids, err := r.RenderPromptKwargs(msgs, tools, kwargs)
	return ids, wrapInput(err)
}

// RenderTraining renders a conversation as a training sequence; assistant turns with Trainable set get
// loss on their tokens (a turn's sampled ids when it carries them) and on the end-of-turn marker the
// template closes them with (<|im_end|>, <|eot_id|>, ...; none when it closes turns with a newline or
// nothing, and what its {% generation %} blocks hold when it has them).
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
	return sampleResult(sample.Run(ctx, b.w, lora, b, prompt, p, onToken))
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
