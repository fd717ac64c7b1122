package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/trainyard/trainyard/internal/config"
)

// loadConfig reads the environment, applies the command's flags (the common
// ones plus those extra registers) and validates the result for mode.
func loadConfig(name string, args []string, mode config.Mode, extra func(*flag.FlagSet)) (config.Config, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	fs := flag.NewFlagSet("trainyard "+name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	cfg.BindFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return cfg, usageError{fmt.Sprintf("trainyard %s: unexpected arguments %q", name, fs.Args())}
	}
	if mode == config.ModeDatabase {
		// Run in a checkout after `make run`, the tools use its database.
		if err := cfg.UseRecordedDatabaseURL(); err != nil {
			return cfg, fmt.Errorf("configuration: %w", err)
		}
	}
	if err := cfg.Validate(mode); err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	return cfg, nil
}

// loadServer loads the configuration of a long-running command (serve, api,
// worker) and builds its logger: console lines for the embedded mode of
// `serve`, JSON for production. The caller defers syncLogger(log).
func loadServer(name string, args []string, mode config.Mode) (config.Config, *zap.Logger, error) {
	return loadServerWith(name, args, mode, nil)
}

// loadServerWith is loadServer with flags of the command's own.
func loadServerWith(name string, args []string, mode config.Mode, extra func(*flag.FlagSet)) (config.Config, *zap.Logger, error) {
	cfg, err := loadConfig(name, args, mode, extra)
	if err != nil {
		return cfg, nil, err
	}
	log, err := newLogger(cfg.LogLevel, mode == config.ModeEmbedded)
	return cfg, log, err
}

// newLogger builds the process logger on stderr: human-readable console
// lines for `serve` (a developer watches them), JSON for the production
// commands (a log collector reads them).
func newLogger(level zapcore.Level, console bool) (*zap.Logger, error) {
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.Sampling = nil
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	if console {
		zc.Encoding = "console"
		zc.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		zc.DisableStacktrace = true
	}
	l, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("build logger: %w", err)
	}
	return l, nil
}

// atLeast raises l's level to min; a logger already at min or above is
// returned as is (zap refuses to lower a level and complains).
func atLeast(l *zap.Logger, min zapcore.Level) *zap.Logger {
	if l.Level() < min {
		return l.WithOptions(zap.IncreaseLevel(min))
	}
	return l
}

// syncLogger flushes l; stderr returns EINVAL on sync when it is a
// terminal, which is not worth reporting.
func syncLogger(l *zap.Logger) { _ = l.Sync() }

// printf writes user-facing output (keys, URLs) to w, not to the log.
func printf(w io.Writer, format string, args ...any) { fmt.Fprintf(w, format, args...) }
