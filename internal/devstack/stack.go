// Package devstack runs the embedded development infrastructure of
// `trainyard serve`: a single-process Temporal server persisted to a SQLite
// file and the Temporal Web UI pointed at it.
//
// It is the only non-test package that imports go.temporal.io/server, which
// is large and slow to compile; everything else talks to Temporal through the
// SDK, so production deployments never link the server in.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.uber.org/zap"
)

// Defaults used when a Config field is left empty.
const (
	DefaultFrontendAddr = "127.0.0.1:7233"
	DefaultUIAddr       = "127.0.0.1:8233"
	DefaultNamespace    = "default"
	DefaultRetention    = 7 * 24 * time.Hour
	// DatabaseFileName is the SQLite file under Config.DataDir.
	DatabaseFileName = "temporal.db"
)

// Config describes the embedded stack. Only DataDir is required.
type Config struct {
	// DataDir holds the SQLite database; it is created if missing.
	DataDir string
	// Postgres, when set, persists the server in PostgreSQL (the
	// production configuration) instead of the SQLite file.
	Postgres *Postgres
	// FrontendAddr is the host:port of the frontend gRPC service that SDK
	// clients dial. Port 0 picks a free port (tests).
	FrontendAddr string
	// UIAddr is the host:port of the Web UI. Port 0 picks a free port.
	UIAddr string
	// DisableUI runs the server without the Web UI.
	DisableUI bool
	// Namespace is registered on start if it does not exist.
	Namespace string
	// Retention is how long closed workflows stay visible in the namespace.
	// It applies when the namespace is first registered.
	Retention time.Duration
	// SearchAttributes are custom search attributes ensured on every start,
	// so a database created by an older build gains the new ones too.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger receives the server's logs at warn level and above; nil
	// discards them.
	Logger *zap.Logger
}

func (c *Config) applyDefaults() {
	if c.FrontendAddr == "" {
		c.FrontendAddr = DefaultFrontendAddr
	}
	if c.UIAddr == "" {
		c.UIAddr = DefaultUIAddr
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		return errors.New("devstack: DataDir is required")
	}
	if c.Retention < 24*time.Hour {
		// Temporal rejects namespaces whose retention is under one day.
		return fmt.Errorf("devstack: retention %s is below the one-day minimum", c.Retention)
	}
	return nil
}

// Stack is a running embedded Temporal server and, unless disabled, its Web
// UI. Close stops both.
type Stack struct {
	cfg      Config
	temporal *temporalServer
	ui       *uiServer
}

// Start brings up the Temporal server on the SQLite file in cfg.DataDir
// (creating the schema and the namespace on first use), waits until the
// frontend answers and the namespace is usable, ensures the configured
// search attributes, and then starts the Web UI. It returns only when
// clients can use the stack, or with an error after cleaning up.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("devstack: create data dir: %w", err)
	}
	frontend, err := reserveAddr(cfg.FrontendAddr)
	if err != nil {
		return nil, fmt.Errorf("devstack: temporal frontend: %w", err)
	}
	cfg.FrontendAddr = frontend
	if !cfg.DisableUI {
		ui, err := reserveAddr(cfg.UIAddr)
		if err != nil {
			return nil, fmt.Errorf("devstack: temporal ui: %w", err)
		}
		cfg.UIAddr = ui
	}

	s := &Stack{cfg: cfg}
	s.temporal, err = startTemporal(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.temporal.ensureSearchAttributes(ctx, cfg.Namespace, cfg.SearchAttributes); err != nil {
		s.Close()
		return nil, err
	}
	if !cfg.DisableUI {
		s.ui, err = startUI(ctx, cfg)
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// FrontendAddr is the host:port SDK clients dial (client.Options.HostPort).
func (s *Stack) FrontendAddr() string { return s.cfg.FrontendAddr }

// Namespace is the namespace the stack registered.
func (s *Stack) Namespace() string { return s.cfg.Namespace }

// UIURL is the Web UI's base URL, or "" when the UI is disabled.
func (s *Stack) UIURL() string {
	if s.ui == nil {
		return ""
	}
	return "http://" + s.cfg.UIAddr
}

// DatabasePath is the SQLite file that holds the server's state.
func (s *Stack) DatabasePath() string { return databasePath(s.cfg.DataDir) }

// Close stops the UI and then the server. It is safe to call more than once.
func (s *Stack) Close() error {
	var errs []error
	if s.ui != nil {
		errs = append(errs, s.ui.close())
		s.ui = nil
	}
	if s.temporal != nil {
		errs = append(errs, s.temporal.close())
		s.temporal = nil
	}
	return errors.Join(errs...)
}

func databasePath(dataDir string) string { return filepath.Join(dataDir, DatabaseFileName) }
