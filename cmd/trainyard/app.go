package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/dashboard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/catalog"
	"github.com/trainyard/trainyard/engine/linalg"
	"github.com/trainyard/trainyard/inference"
	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/retention"
	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/worker"
	"github.com/trainyard/trainyard/workflows"
)

// app wires trainyard's own components on top of the infrastructure: the
// API (with chat serving) and the Temporal worker. `serve` builds both in
// one process; `api` and `worker` build one each.
type app struct {
	cfg   config.Config
	inf   *infra
	log   *zap.Logger
	bases *catalog.Catalog // shared by serving and training, so a base model is loaded once
	jobs  *workflows.Client
	// fetchLoopback lets http(s) training data come from loopback when
	// cfg.FetchAllowLocal is unset: `serve`'s default.
	fetchLoopback bool
}

// gcPercent is the collector's GOGC unless the environment sets one. Most of a serving and training process's
// live heap lives as long as the process: a base's packed weights, a worker's training arena (kept for the next
// job) and the state it caches, 2.2 GB at SmolLM2-135M with Qwen3's vocabulary. The default 100 let the heap
// grow by as much again before collecting, so each RL iteration's rollouts (their caches and buffers, 0.5 GB)
// were written into memory the process had never touched, and first touches are dear under a hypervisor: in
// `make bench-loop` on the 2-core Zen 5 VM the rollouts took 5.5–6.2 s, then 7.0–8.0, then 8.2–9.5 s,
// iteration after iteration (page faults and their zeroing, seen in perf), and iterations 17.9–25.0 s. At 40
// the collector runs about every 0.9 GB of allocation, mostly over pointer-free slices that it does not scan,
// and the rollouts reuse what the last ones freed: 6.3–7.6 s, iterations 18.8–19.4 s (two runs each, interleaved).
const gcPercent = 40

func newApp(cfg config.Config, inf *infra, log *zap.Logger) *app {
	if lim := cfg.Worker.MemoryLimit; lim > 0 && os.Getenv("GOMEMLIMIT") == "" {
		// Training sizes its micro-batches to the memory limit; the collector must keep the garbage a step
		// leaves within it too, which the default GOGC does not with gigabytes of live weights (a Gemma 3
		// 270M RL step measured 1.62 GB against a 1.5 GB limit without this, 1.43 GB with it).
		debug.SetMemoryLimit(lim)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	// Process-wide, and before any base loads: with the pair products taking every batched product, bases
	// are not packed for the blocked kernel (linalg.PairsServeBatches). Unset, each stays as linalg chose
	// for this CPU (on where the bfloat16 products outrun the float32 kernels).
	if on := cfg.Chat.BF16Dot; on != nil {
		linalg.SetBF16Dot(*on)
	}
	if on := cfg.Worker.BF16Train; on != nil {
		linalg.SetBF16Train(*on)
	}
	log.Info("matrix products", zap.String("kernels", linalg.Backend()), zap.String("bf16_tiles", linalg.PairsKernel()),
		zap.Bool("bf16_pays", linalg.BF16Pays()), zap.Bool("chat_bf16_products", linalg.BF16Dot()),
		zap.Bool("train_bf16_products", linalg.BF16Train()))
	a := &app{cfg: cfg, inf: inf, log: log, bases: openCatalog(cfg, log)}
	if inf.temporal != nil { // infer has no Temporal
		a.jobs = workflows.NewClient(inf.temporal, workflows.ClientOptions{
			TaskQueue: cfg.Temporal.TaskQueue,
			Workflow:  workflows.Options{Deadline: cfg.JobDeadline, HeartbeatTimeout: cfg.HeartbeatTimeout, MaxWorkers: cfg.MaxWorkersPerJob},
			Jobs:      inf.db,
			Events:    inf.db,
			Models:    inf.db,
			Blobs:     inf.blobs,
		})
	}
	return a
}

// openCatalog is the process's registry of base models: the built-in ones,
// TRAINYARD_BASE_MODELS' directories and the snapshots under the models
// directory. A snapshot the engine cannot load is left out with one log
// line naming its file and field; the process starts without it.
func openCatalog(cfg config.Config, log *zap.Logger) *catalog.Catalog {
	c := catalog.New(cfg.BaseModelDirs)
	root := cfg.ModelsDirPath()
	skipped, err := c.Scan(root)
	for _, s := range skipped {
		log.Warn("model snapshot skipped", zap.String("base_model", s.Name), zap.String("reason", s.Err.Error()))
	}
	if err != nil {
		log.Warn("models directory not read", zap.String("dir", root), zap.Error(err))
	}
	return c
}

// servedBaseModels are the base models this process serves chat for:
// TRAINYARD_BASE_MODELS, or every one it knows.
func (a *app) servedBaseModels() []string {
	if len(a.cfg.BaseModels) > 0 {
		return a.cfg.BaseModels
	}
	return a.knownBaseModels()
}

// knownBaseModels are the configured base models, then the snapshots of the
// models directory and the built-in ones not among them: what models may be
// created on, and which names chat requests treat as base models (the first
// answers requests naming none).
func (a *app) knownBaseModels() []string {
	names := slices.Clone(a.cfg.BaseModels)
	for _, n := range a.bases.Names() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// chatService samples chat completions in this process, on the base models
// the worker shares (one copy of each in memory).
func (a *app) chatService() *serving.Service {
	kv := a.cfg.Chat.KVCacheBytes
	if kv == 0 {
		// The decoding caches share the memory limit with the weights and training.
		kv = a.cfg.Worker.MemoryLimit / 4
	}
	return serving.New(serving.Config{
		Concurrency:           a.cfg.Chat.Concurrency,
		PerAccountConcurrency: a.cfg.Chat.PerAccountConcurrency,
		AdapterCacheBytes:     a.cfg.Chat.AdapterCacheBytes,
		KVCacheBytes:          kv,
		QueueLength:           a.cfg.Chat.QueueLength,
		QueueWait:             a.cfg.Chat.QueueWait,
		BaseModels:            a.servedBaseModels(),
		OpenBase: func(name string) (*engine.Base, error) {
			return a.bases.Base(context.Background(), name)
		},
	}, a.inf.db, a.inf.blobs, a.log.Named("serving"))
}

// apiHandler builds the HTTP API with training jobs, the system-check
// probes and chat completions: sampled here (serve, and api with
// TRAINYARD_INFERENCE=local) or forwarded to `trainyard infer` processes
// (remote), whose registry the router reads until ctx is done.
func (a *app) apiHandler(ctx context.Context) http.Handler {
	deps := api.Deps{
		Accounts:  a.inf.db,
		Models:    a.inf.db,
		Logs:      a.inf.db,
		Jobs:      a.inf.db,
		Events:    a.inf.db,
		Blobs:     a.inf.blobs,
		Files:     a.inf.blobs,
		Checks:    healthChecks(a.inf, a.cfg.Temporal.TaskQueue),
		Logger:    a.log.Named("api"),
		Workflows: a.jobs,
		Bases:     a.bases,
		Dashboard: dashboard.Handler(),
		Retention: &retention.Pruner{Models: a.inf.db, Blobs: a.inf.blobs, ServedWindow: a.cfg.ServedWindow},
	}
	if a.cfg.Inference.Mode == config.InferenceRemote {
		router := inference.NewRouter(a.inf.db, a.inf.db, inference.RouterConfig{
			BaseModels:   a.knownBaseModels(),
			WriteTimeout: a.httpWriteTimeout(),
		}, a.log.Named("router"))
		go router.Run(ctx)
		deps.ChatRouter = router
		deps.Checks = append(deps.Checks, api.HealthCheck{Name: "inference", Check: router.Check})
	} else {
		deps.Chat = a.chatService()
	}
	return api.New(a.apiConfig(a.knownBaseModels()), deps).Handler()
}

// inferHandler is the API of `trainyard infer`: probes, /metrics and chat
// completions, authenticated and limited as the main API does.
func (a *app) inferHandler(chat *serving.Service) http.Handler {
	cfg := a.apiConfig(chat.BaseModels())
	cfg.InferenceOnly = true
	return api.New(cfg, api.Deps{
		Accounts: a.inf.db,
		Models:   a.inf.db,
		Blobs:    a.inf.blobs,
		Checks:   []api.HealthCheck{{Name: "database", Check: a.inf.db.Ping}, {Name: "storage", Check: a.inf.blobs.Ping}},
		Logger:   a.log.Named("api"),
		Chat:     chat,
	}).Handler()
}

// fetchPolicy is the address policy of http(s) training data: what
// TRAINYARD_FETCH_ALLOW_LOCAL says, else the mode's default.
func (a *app) fetchPolicy() activities.AddressPolicy {
	if a.cfg.FetchAllowLocal != nil {
		return activities.AddressPolicy{AllowLocal: *a.cfg.FetchAllowLocal}
	}
	return activities.AddressPolicy{AllowLoopback: a.fetchLoopback}
}

func (a *app) apiConfig(baseModels []string) api.Config {
	return api.Config{
		MaxBodyBytes:      a.cfg.MaxBodyBytes,
		BodyTimeout:       a.cfg.HTTP.BodyTimeout,
		WriteTimeout:      a.cfg.HTTP.WriteTimeout,
		MaxRequestsPerKey: a.cfg.HTTP.MaxRequestsPerKey,
		BaseModels:        baseModels,
		Jobs:              api.JobsConfig{Data: a.dataPolicy()},
		Dashboard:         api.DashboardConfig{TemporalUIURL: a.cfg.Temporal.UIURL, TemporalNamespace: a.cfg.Temporal.Namespace},
	}
}

// httpWriteTimeout is the API's bound on each write to a client.
func (a *app) httpWriteTimeout() time.Duration {
	if a.cfg.HTTP.WriteTimeout > 0 {
		return a.cfg.HTTP.WriteTimeout
	}
	return api.DefaultWriteTimeout
}

// newWorker builds the Temporal worker (job workflows and training
// activities) and the reconciler that repairs jobs whose workflow never
// started or ended without closing them.
func (a *app) newWorker() (*worker.Worker, *worker.Reconciler, error) {
	acts, err := activities.New(activities.Deps{
		Jobs:      a.inf.db,
		Events:    a.inf.db,
		Models:    a.inf.db,
		Blobs:     a.inf.blobs,
		Queue:     a.inf.db,
		Workflows: a.jobs,
		Bases:     a.bases,
		Workers:   a.inf.db,
		Files:     a.inf.blobs,
		HTTP:      activities.NewFetchClient(a.fetchPolicy()),
		Logger:    a.log.Named("activities"),
	}, activities.Config{Data: a.dataPolicy(), DownloadTimeout: a.cfg.Worker.DownloadTimeout,
		DownloadRetryWindow: a.cfg.Worker.DownloadRetryWindow,
		FetchPerAccount:     a.cfg.Worker.FetchConcurrency / 2, // 0: the activities' default
		ServedWindow:        a.cfg.ServedWindow, MemoryLimit: a.cfg.Worker.MemoryLimit,
		ChunkDuration: a.cfg.Worker.ChunkDuration, TrainingSlots: a.cfg.Worker.TrainingConcurrency})
	if err != nil {
		return nil, nil, fmt.Errorf("activities: %w", err)
	}
	w, err := worker.New(a.inf.temporal, acts, worker.Config{
		TaskQueue:           a.cfg.Temporal.TaskQueue,
		TrainingConcurrency: a.cfg.Worker.TrainingConcurrency,
		FetchConcurrency:    a.cfg.Worker.FetchConcurrency,
		// The base models it trains on are those it would serve:
		// TRAINYARD_BASE_MODELS, or every one it knows.
		BaseModels: a.servedBaseModels(),
		Registry:   a.inf.db,
	}, a.log.Named("worker"))
	if err != nil {
		return nil, nil, fmt.Errorf("worker: %w", err)
	}
	rec := &worker.Reconciler{Jobs: a.inf.db, Workflows: a.jobs, Log: a.log.Named("reconciler")}
	return w, rec, nil
}

// dataPolicy is which training_data_url forms jobs may use; the API checks
// it up front and the worker again before it reads anything.
func (a *app) dataPolicy() jobspec.DataPolicy {
	return jobspec.DataPolicy{AllowFile: a.cfg.AllowFileURLs, S3: a.inf.blobs.ReadPolicy()}
}

// httpServer is the API's listener and server, split so the address is
// known (and printed) before serving starts.
type httpServer struct {
	srv *http.Server
	ln  net.Listener
}

// listenHTTP binds addr before anything slow starts, so a busy port fails
// the command at once instead of after the embedded stack came up.
func listenHTTP(addr string) (*httpServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("API listener on %s (is another trainyard running? set %s): %w", addr, config.EnvHTTPAddr, err)
	}
	srv := &http.Server{}
	api.ConfigureHTTPServer(srv)
	return &httpServer{ln: ln, srv: srv}, nil
}

// URL is the API's base URL.
func (h *httpServer) URL() string { return "http://" + h.ln.Addr().String() }

// close releases a listener that was never served.
func (h *httpServer) close() { _ = h.ln.Close() }

// run serves h until ctx is done, then lets in-flight requests finish for
// up to shutdownTimeout.
func (h *httpServer) run(ctx context.Context, handler http.Handler) error {
	return h.runDraining(ctx, handler, nil)
}

// runDraining is run that calls drain (when not nil) once ctx is done and
// before the listener closes, so others can stop sending first.
func (h *httpServer) runDraining(ctx context.Context, handler http.Handler, drain func()) error {
	h.srv.Handler = handler
	errc := make(chan error, 1)
	go func() { errc <- h.srv.Serve(h.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("API server: %w", err)
	case <-ctx.Done():
	}
	if drain != nil {
		drain()
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := h.srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("API shutdown: %w", err)
	}
	return nil
}

// shutdownTimeout bounds the wait for in-flight requests (a streaming chat
// completion may take a while) on SIGINT/SIGTERM.
const shutdownTimeout = 15 * time.Second
