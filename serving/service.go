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
	// Concurrency caps the generations in flight across all accounts; past it requests get 429. Zero
	// means 8 × GOMAXPROCS: requests on the same model share batched decoding steps, whose throughput on
	// tiny-chat grows up to about 8 streams per 2 cores and then only adds latency to every stream.
	Concurrency int
	// PerAccountConcurrency caps one account's generations in flight; zero means half of Concurrency (at
	// least 1), so one busy account always leaves room for the others instead of taking every slot.
	PerAccountConcurrency int
	// AdapterCacheBytes bounds the loaded adapters kept in memory; zero means DefaultAdapterCacheBytes.
	AdapterCacheBytes int64
	// BaseModels are the base model names served; nil means engine.BuiltinNames().
	BaseModels []string
	// OpenBase opens a base model by name; nil means engine.OpenBuiltin.
	OpenBase func(name string) (*engine.Base, error)
	// MaxChoices bounds n, the completions of one request; zero means DefaultMaxChoices.
	MaxChoices int
}

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
		cfg.Concurrency = 8 * runtime.GOMAXPROCS(0)
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
		limit: newLimiter(cfg.Concurrency, cfg.PerAccountConcurrency)}
}

// BaseModels returns the base model names served.
func (s *Service) BaseModels() []string { return append([]string(nil), s.cfg.BaseModels...) }

// Load returns the generations in flight and the most admitted at once (Config.Concurrency): what an
// inference process reports to the registry so the API can send work where there is room.
func (s *Service) Load() (inFlight, capacity int) { return s.limit.load() }

// MaxChoices returns the largest n a request may ask for.
func (s *Service) MaxChoices() int { return s.cfg.MaxChoices }

// Start admits a request and prepares its generation: it takes a concurrency slot (ELIMIT past the caps),
// resolves the model (ENOTFOUND), loads the adapter, renders the prompt and checks it fits the context
// (EBADREQUEST). Everything a client can get wrong fails here, before a streaming answer has begun. The
// caller must Close the generation.
func (s *Service) Start(ctx context.Context, req Request) (*Generation, error) {
	started := time.Now()
	release, err := s.limit.acquire(req.AccountID)
	if err != nil {
		telemetry.ChatRejected.Inc()
		return nil, err
	}
	g, err := s.prepare(ctx, req)
	if err != nil {
		release()
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
