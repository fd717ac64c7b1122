package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/internal/telemetry"
	"github.com/trainyard/trainyard/workflows"
)

// runAPI is `trainyard api`: the HTTP API alone. Training runs on
// `trainyard worker` processes; /v1/system-check reports whether any poll.
func runAPI(ctx context.Context, args []string, _ io.Writer) error {
	cfg, log, err := loadServer("api", args, config.ModeProduction)
	if err != nil {
		return err
	}
	defer syncLogger(log)
	hs, err := listenHTTP(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	defer hs.close()
	inf, err := connectInfra(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer inf.close()
	log.Info("API listening", zap.String("url", hs.URL()), zap.String("temporal", cfg.Temporal.Address),
		zap.String("task_queue", cfg.Temporal.TaskQueue))
	return hs.run(ctx, newApp(cfg, inf, log).apiHandler(ctx))
}

// runWorker is `trainyard worker`: the Temporal worker and the job
// reconciler. Run as many as there are machines to train on.
func runWorker(ctx context.Context, args []string, _ io.Writer) error {
	cfg, log, err := loadServer("worker", args, config.ModeProduction)
	if err != nil {
		return err
	}
	defer syncLogger(log)
	inf, err := connectInfra(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer inf.close()
	app := newApp(cfg, inf, log)
	w, rec, err := app.newWorker()
	if err != nil {
		return err
	}
	if missing, err := workflows.MissingSearchAttributes(ctx, inf.temporal, cfg.Temporal.Namespace); err != nil {
		log.Warn("cannot check trainyard's search attributes", zap.Error(err))
	} else if len(missing) > 0 {
		log.Warn("Temporal namespace lacks trainyard's search attributes; jobs run without them until `trainyard migrate` (with TEMPORAL_ADDRESS set) registers them",
			zap.String("namespace", cfg.Temporal.Namespace), zap.Strings("missing", missing))
	}
	go rec.Run(ctx)
	serveMetrics(ctx, cfg.MetricsAddr, log)
	log.Info("worker polling", zap.String("temporal", cfg.Temporal.Address), zap.String("task_queue", cfg.Temporal.TaskQueue),
		zap.String("worker_id", w.ID()), zap.Strings("base_models", app.servedBaseModels()))
	return w.Run(ctx)
}

// serveMetrics serves the process's Prometheus metrics at addr (a worker has
// no API to carry /metrics) until ctx is done. A listener that cannot start
// is logged, not fatal: training matters more than its metrics.
func serveMetrics(ctx context.Context, addr string, log *zap.Logger) {
	if addr == "" || addr == config.MetricsOff {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("metrics listener", zap.String("addr", addr), zap.Error(err))
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", telemetry.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("metrics listening", zap.String("url", "http://"+ln.Addr().String()+"/metrics"))
}
