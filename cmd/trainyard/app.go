package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/jobspec"
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
	bases *worker.Bases // shared by serving and training, so a base model is loaded once
	jobs  *workflows.Client
}

func newApp(cfg config.Config, inf *infra, log *zap.Logger) *app {
	return &app{
		cfg:   cfg,
		inf:   inf,
		log:   log,
		bases: &worker.Bases{},
		jobs: workflows.NewClient(inf.temporal, workflows.ClientOptions{
			TaskQueue: cfg.Temporal.TaskQueue,
			Workflow:  workflows.Options{Deadline: cfg.JobDeadline},
			Jobs:      inf.db,
			Events:    inf.db,
			Models:    inf.db,
		}),
	}
}

// apiHandler builds the HTTP API with chat completions, training jobs and
// the system-check probes.
func (a *app) apiHandler() http.Handler {
	baseModels := engine.BuiltinNames()
	chat := serving.New(serving.Config{
		Concurrency:           a.cfg.Chat.Concurrency,
		PerAccountConcurrency: a.cfg.Chat.PerAccountConcurrency,
		AdapterCacheBytes:     a.cfg.Chat.AdapterCacheBytes,
		BaseModels:            baseModels,
		OpenBase: func(name string) (*engine.Base, error) {
			return a.bases.Base(context.Background(), name)
		},
	}, a.inf.db, a.inf.blobs, a.log.Named("serving"))
	srv := api.New(api.Config{
		MaxBodyBytes:      a.cfg.MaxBodyBytes,
		BodyTimeout:       a.cfg.HTTP.BodyTimeout,
		WriteTimeout:      a.cfg.HTTP.WriteTimeout,
		MaxRequestsPerKey: a.cfg.HTTP.MaxRequestsPerKey,
		BaseModels:        baseModels,
		Jobs:              api.JobsConfig{Data: a.dataPolicy()},
	}, api.Deps{
		Accounts:  a.inf.db,
		Models:    a.inf.db,
		Logs:      a.inf.db,
		Jobs:      a.inf.db,
		Events:    a.inf.db,
		Blobs:     a.inf.blobs,
		Files:     a.inf.blobs,
		Checks:    healthChecks(a.inf, a.cfg.Temporal.TaskQueue),
		Logger:    a.log.Named("api"),
		Chat:      chat,
		Workflows: a.jobs,
		Bases:     a.bases,
	})
	return srv.Handler()
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
		Files:     a.inf.blobs,
		HTTP: activities.NewFetchClient(activities.AddressPolicy{
			AllowLocal: a.cfg.FetchAllowLocal != nil && *a.cfg.FetchAllowLocal}),
		Logger: a.log.Named("activities"),
	}, activities.Config{Data: a.dataPolicy(), DownloadTimeout: a.cfg.Worker.DownloadTimeout,
		FetchPerAccount: a.cfg.Worker.FetchConcurrency / 2}) // 0: the activities' default
	if err != nil {
		return nil, nil, fmt.Errorf("activities: %w", err)
	}
	w, err := worker.New(a.inf.temporal, acts, worker.Config{
		TaskQueue:           a.cfg.Temporal.TaskQueue,
		TrainingConcurrency: a.cfg.Worker.TrainingConcurrency,
		FetchConcurrency:    a.cfg.Worker.FetchConcurrency,
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
	h.srv.Handler = handler
	errc := make(chan error, 1)
	go func() { errc <- h.srv.Serve(h.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("API server: %w", err)
	case <-ctx.Done():
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
