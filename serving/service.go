package serving

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// DefaultAdapterCacheBytes bounds the adapters kept loaded when Config.AdapterCacheBytes is zero. A rank-8
// adapter of the built-in model is under 1 MiB, so this holds a few hundred checkpoints.
const DefaultAdapterCacheBytes = 256 << 20

// Config holds the serving settings; the zero value is usable.
type Config struct {
	// Concurrency caps the completions decoded at once across all accounts (the rows of a batched decoding
	// step: a request with n choices takes n); past it requests wait in a queue. Zero means 32 ×
	// GOMAXPROCS: a decoding step reads the weights once for all its rows, so throughput keeps growing
	// with the batch well past 8 rows, and the KV-cache budget below bounds the memory.
	Concurrency int
	// PerAccountConcurrency caps one account's rows while other accounts wait for room; zero means half of
	// Concurrency (at least 1). An account alone may use the whole batch.
	PerAccountConcurrency int
	// KVCacheBytes bounds the decoding caches of the generations admitted at once (each reserves n ×
	// (prompt + max_tokens) positions); zero means DefaultKVCacheBytes. A generation larger than the
	// whole budget runs alone.
	KVCacheBytes int64
	// QueueLength bounds the requests waiting for room; past it they get 429. Zero means DefaultQueueLength.
	QueueLength int
	// QueueWait bounds how long a request waits for room before it gets 429; zero means DefaultQueueWait.
	QueueWait time.Duration
	// AdapterCacheBytes bounds the loaded adapters kept in memory; zero means DefaultAdapterCacheBytes.
	AdapterCacheBytes int64
	// BaseModels are the base model names served; nil means engine.BuiltinNames().
	BaseModels []string
	// OpenBase opens a base model by name; nil means engine.OpenBuiltin.
	OpenBase func(name string) (*engine.Base, error)
	// MaxChoices bounds n, the completions of one request; zero means DefaultMaxChoices.
	MaxChoices int
}

// Defaults of the admission queue (Config.KVCacheBytes, QueueLength, QueueWait).
const (
	DefaultKVCacheBytes = 4 << 30
	DefaultQueueLength  = 1024
	DefaultQueueWait    = 5 * time.Minute
)

// DefaultMaxChoices bounds n when Config.MaxChoices is zero: every choice is a KV cache and a row of each
// decoding step.
const DefaultMaxChoices = 16

// Service serves chat completions. It is safe for concurrent use.
type Service struct {
	cfg      Config
	resolver resolver
	bases    *bases
	adapters *adapters
	served   *servedMarks
	limit    *limiter
}

// New builds the service over the model store (resolution) and the blob store (adapter weights).
func New(cfg Config, models trainyard.ModelStore, blobs trainyard.BlobStore, log *zap.Logger) *Service {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 32 * runtime.GOMAXPROCS(0)
	}
	if cfg.KVCacheBytes <= 0 {
		cfg.KVCacheBytes = DefaultKVCacheBytes
	}
	if cfg.QueueLength <= 0 {
		cfg.QueueLength = DefaultQueueLength
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.PerAccountConcurrency <= 0 {
		cfg.PerAccountConcurrency = max(1, cfg.Concurrency/2)
	}
	if cfg.AdapterCacheBytes <= 0 {
		cfg.AdapterCacheBytes = DefaultAdapterCacheBytes
	}
	if cfg.MaxChoices <= 0 {
		cfg.MaxChoices = DefaultMaxChoices
	}
	if cfg.BaseModels == nil {
		cfg.BaseModels = engine.BuiltinNames()
	}
	if cfg.OpenBase == nil {
		cfg.OpenBase = engine.OpenBuiltin
	}
	if log == nil {
		log = zap.NewNop()
	}
	b := newBases(cfg.BaseModels, cfg.OpenBase)
	return &Service{cfg: cfg, bases: b, resolver: resolver{models: models, isBase: b.has},
		adapters: newAdapters(blobs, cfg.AdapterCacheBytes, log), served: newServedMarks(models, log),
		limit: newLimiter(cfg.Concurrency, cfg.PerAccountConcurrency, cfg.KVCacheBytes, cfg.QueueLength, cfg.QueueWait)}
}

// BaseModels returns the base model names served.
func (s *Service) BaseModels() []string { return append([]string(nil), s.cfg.BaseModels...) }

// Load returns the decoding rows in flight and the most admitted at once (Config.Concurrency): what an
// inference process reports to the registry so the API can send work where there is room.
func (s *Service) Load() (inFlight, capacity int) { return s.limit.load() }

// Queued returns the requests waiting for room in the decoding batch.
func (s *Service) Queued() int { return s.limit.queueLen() }

// MaxChoices returns the largest n a request may ask for.
func (s *Service) MaxChoices() int { return s.cfg.MaxChoices }

// Start prepares a request's generation and admits it: it resolves the model (ENOTFOUND), loads the
// adapter, renders the prompt and checks it fits the context (EBADREQUEST), then waits in the admission
// queue for room in the decoding batch (ELIMIT when the queue is full or the wait too long; ctx's error
// when the client goes away while waiting). Everything a client can get wrong fails before it queues, and
// before a streaming answer has begun. The caller must Close the generation.
func (s *Service) Start(ctx context.Context, req Request) (*Generation, error) {
	started := time.Now()
	g, err := s.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	// Each choice decodes into a cache sized for the prompt and every token it may generate.
	positions := int64(g.base.ContextLength())
	if g.req.MaxTokens > 0 {
		positions = int64(len(g.prompt) + g.req.MaxTokens)
	}
	n := max(g.params.N, 1)
	telemetry.ChatQueued.Inc()
	release, err := s.limit.acquire(ctx, req.AccountID, n, int64(n)*positions*g.base.KVBytesPerToken())
	telemetry.ChatQueued.Dec()
	telemetry.ChatQueueWait.Observe(time.Since(started).Seconds())
	if err != nil {
		if trainyard.ErrorCode(err) == trainyard.ELIMIT {
			telemetry.ChatRejected.Inc()
		}
		return nil, err
	}
	g.release, g.started = release, started
	return g, nil
}

func (s *Service) prepare(ctx context.Context, req Request) (*Generation, error) {
	tg, err := s.resolver.resolve(ctx, req.AccountID, req.Model)
	if err != nil {
		return nil, err
	}
	slot, err := s.bases.get(tg.Base)
	if err != nil {
		return nil, err
	}
	base := slot.base
	g := &Generation{req: req, base: base, sampler: slot.sampler, vocab: slot.grammarVocab,
		// With tool_choice "none" the model still sees the tools (as in vLLM), its output is not parsed.
		parseTools: len(req.Tools) > 0 && req.ToolChoice.Mode != ToolChoiceNone}
	if tg.Checkpoint != nil {
		s.served.mark(ctx, tg.Checkpoint)
		if g.sampler, err = s.adapters.get(ctx, base, req.Model, tg.Checkpoint); err != nil {
			return nil, err
		}
	}
	g.prompt, err = base.RenderPromptKwargs(engineMessages(req.Messages), engineTools(req.Tools), req.TemplateKwargs)
	if err != nil {
		if errors.Is(err, engine.ErrInvalidInput) {
			return nil, trainyard.WrapError(trainyard.EBADREQUEST, err, "The messages cannot be rendered for this model: %v", err)
		}
		return nil, fmt.Errorf("render prompt: %w", err)
	}
	if err := g.checkContext(); err != nil {
		return nil, err
	}
	g.thinking = reasoningOf(base, req, g.prompt)
	g.params = sampleParams(req)
	if err := g.constrain(); err != nil {
		return nil, err
	}
	return g, nil
}

// checkContext answers an overflow with OpenAI's wording, before any sampling.
func (g *Generation) checkContext() error {
	ctxLen, n := g.base.ContextLength(), len(g.prompt)
	if n >= ctxLen || n+g.req.MaxTokens > ctxLen {
		return trainyard.Errorf(trainyard.EBADREQUEST,
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			ctxLen, n+g.req.MaxTokens, n, g.req.MaxTokens)
	}
	return nil
}

func sampleParams(req Request) engine.SampleParams {
	seed := rand.Int64()
	if req.Seed != nil {
		seed = *req.Seed
	}
	return engine.SampleParams{Temperature: float32(req.Temperature), TopP: float32(req.TopP), TopK: req.TopK,
		Seed: seed, MaxTokens: req.MaxTokens, Stop: req.Stop, N: max(req.N, 1), TopLogprobs: req.TopLogprobs}
}

func engineMessages(in []trainyard.Message) []engine.Message {
	out := make([]engine.Message, len(in))
	for i, m := range in {
		out[i] = engine.Message{Role: m.Role, Content: m.Content.Text(), Name: m.Name, ToolCallID: m.ToolCallID,
			Reasoning: m.ReasoningText()}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, engine.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return out
}

func engineTools(in []trainyard.Tool) []engine.Tool {
	out := make([]engine.Tool, len(in))
	for i, t := range in {
		out[i] = engine.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
	}
	return out
}
