package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/internal/devstack"
	"github.com/trainyard/trainyard/internal/s3gw"
	"github.com/trainyard/trainyard/workflows"
)

// Credentials of the embedded S3 gateway when none are configured. It
// listens on loopback only and serves this process alone.
const (
	embeddedS3AccessKey = "trainyard"
	embeddedS3SecretKey = "trainyard-local-secret"
)

// runServe is `trainyard serve`: the whole service in one process on
// embedded infrastructure, each part replaced by an external one when
// configured (TEMPORAL_ADDRESS, S3_ENDPOINT). PostgreSQL always comes from
// DATABASE_URL (make run finds or starts one).
func runServe(ctx context.Context, args []string, stdout io.Writer) error {
	started := time.Now()
	cfg, log, err := loadServer("serve", args, config.ModeEmbedded)
	if err != nil {
		return err
	}
	defer syncLogger(log)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := config.RecordDatabaseURL(cfg.DataDir, cfg.DatabaseURL); err != nil {
		return err
	}
	hs, err := listenHTTP(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	defer hs.close()

	// Embedded services fill in the addresses left unconfigured.
	uiURL := ""
	if cfg.Temporal.Address == "" {
		stack, err := devstack.Start(ctx, devstack.Config{
			DataDir:      filepath.Join(cfg.DataDir, "temporal"),
			FrontendAddr: cfg.Temporal.FrontendAddr,
			UIAddr:       cfg.Temporal.UIAddr,
			DisableUI:    cfg.Temporal.UIAddr == config.UIDisabled,
			Namespace:    cfg.Temporal.Namespace,
			// Operators find jobs by model, account and status in the UI.
			SearchAttributes: workflows.SearchAttributeTypes(),
			Logger:           log,
		})
		if err != nil {
			return fmt.Errorf("embedded Temporal: %w", err)
		}
		defer closeLogged(log, "embedded Temporal", stack.Close)
		cfg.Temporal.Address, uiURL = stack.FrontendAddr(), stack.UIURL()
		if cfg.Temporal.UIURL == "" {
			cfg.Temporal.UIURL = uiURL // the dashboard links jobs to it
		}
	}
	if cfg.S3.Endpoint == "" {
		if cfg.S3.AccessKeyID == "" {
			cfg.S3.AccessKeyID, cfg.S3.SecretAccessKey = embeddedS3AccessKey, embeddedS3SecretKey
		}
		// A child process, because the in-process gateway changes the
		// working directory.
		gw, err := s3gw.StartProcess(ctx, s3gw.Config{
			Dir:             filepath.Join(cfg.DataDir, "s3"),
			Addr:            cfg.S3.EmbeddedAddr,
			AccessKeyID:     cfg.S3.AccessKeyID,
			SecretAccessKey: cfg.S3.SecretAccessKey,
			Region:          cfg.S3.Region,
		}, s3gw.ProcessOptions{})
		if err != nil {
			return fmt.Errorf("embedded S3: %w", err)
		}
		defer closeLogged(log, "embedded S3", func() error { return gw.Close(context.Background()) })
		cfg.S3.Endpoint = gw.Endpoint()
	}

	inf, err := connectInfra(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer inf.close()
	key, err := ensureDefaultKey(ctx, inf.db, cfg)
	if err != nil {
		return err
	}

	a := newApp(cfg, inf, log)
	// On a developer's machine, training data served from localhost is
	// normal; the private networks around it are not (config.FetchAllowLocal
	// opens them, or closes loopback too).
	a.fetchLoopback = true
	w, rec, err := a.newWorker()
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start the worker: %w", err)
	}
	defer w.Stop()
	go rec.Run(ctx)

	printBanner(stdout, banner{
		API: hs.URL(), Key: key, TemporalUI: uiURL, Temporal: cfg.Temporal.Address, Namespace: cfg.Temporal.Namespace,
		S3: cfg.S3.Endpoint, Bucket: cfg.S3.Bucket, DataDir: cfg.DataDir, Took: time.Since(started),
	})
	err = hs.run(ctx, a.apiHandler(ctx))
	log.Info("shutting down")
	return err
}

// closeLogged runs a deferred close and logs its error: shutdown goes on.
func closeLogged(log *zap.Logger, what string, close func() error) {
	if err := close(); err != nil {
		log.Warn("stop "+what, zap.Error(err))
	}
}

// banner is what `serve` tells the developer once everything is up.
type banner struct {
	API, TemporalUI, Temporal, Namespace, S3, Bucket, DataDir string
	Key                                                       devKey
	Took                                                      time.Duration
}

func printBanner(w io.Writer, b banner) {
	ui := b.TemporalUI
	if ui == "" {
		ui = "(not embedded)"
	}
	printf(w, "\ntrainyard is up (%.1fs)\n\n", b.Took.Seconds())
	printf(w, "  Dashboard    %s/  (sign in with the API key)\n", b.API)
	printf(w, "  API          %s\n", b.API)
	printf(w, "  API key      %s\n", b.Key.Key)
	printf(w, "               entity %q, %s\n", b.Key.Entity, b.Key.Source)
	printf(w, "  Temporal UI  %s\n", ui)
	printf(w, "  Temporal     %s (namespace %s)\n", b.Temporal, b.Namespace)
	printf(w, "  S3           %s (bucket %s)\n", b.S3, b.Bucket)
	printf(w, "  Data dir     %s\n\n", b.DataDir)
	printf(w, "  curl -H 'Authorization: Bearer %s' %s/v1/system-check\n\n", b.Key.Key, b.API)
	printf(w, "Press Ctrl+C to stop.\n")
}
