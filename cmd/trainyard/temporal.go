package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/internal/devstack"
	"github.com/trainyard/trainyard/workflows"
)

// runTemporal is `trainyard temporal`: a Temporal server of its own,
// persisted in PostgreSQL (--temporal-database-url or TRAINYARD_TEMPORAL_DATABASE_URL:
// postgres://user:password@host:port/temporal; the databases temporal and
// temporal_visibility are created and migrated on start), with its Web UI
// unless TRAINYARD_TEMPORAL_UI_ADDR is "off". It is the production shape of
// Temporal, built from the server trainyard already links: a single host
// can run it instead of a cluster, and trainyard's own production-topology
// test runs it as a separate process.
func runTemporal(ctx context.Context, args []string, stdout io.Writer) error {
	dbURL := os.Getenv(envTemporalDatabaseURL)
	cfg, log, err := loadServerWith("temporal", args, config.ModeTemporal, func(fs *flag.FlagSet) {
		fs.StringVar(&dbURL, "temporal-database-url", dbURL, "PostgreSQL URL of Temporal's own database ("+envTemporalDatabaseURL+")")
	})
	if err != nil {
		return err
	}
	defer syncLogger(log)
	pg, err := devstack.ParsePostgresURL(dbURL)
	if err != nil {
		return usageError{fmt.Sprintf("trainyard temporal: %s: %v", envTemporalDatabaseURL, err)}
	}
	stack, err := devstack.Start(ctx, devstack.Config{
		DataDir:          cfg.DataDir,
		Postgres:         &pg,
		FrontendAddr:     cfg.Temporal.FrontendAddr,
		UIAddr:           cfg.Temporal.UIAddr,
		DisableUI:        cfg.Temporal.UIAddr == config.UIDisabled,
		Namespace:        cfg.Temporal.Namespace,
		SearchAttributes: workflows.SearchAttributeTypes(),
		Logger:           log,
	})
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	defer closeLogged(log, "Temporal", stack.Close)
	printf(stdout, "Temporal frontend %s (namespace %s, PostgreSQL %s/%s)\n", stack.FrontendAddr(), cfg.Temporal.Namespace, pg.Addr, pg.Database)
	if ui := stack.UIURL(); ui != "" {
		printf(stdout, "Temporal UI %s\n", ui)
	}
	<-ctx.Done()
	return nil
}

// envTemporalDatabaseURL is where `trainyard temporal` keeps its state.
const envTemporalDatabaseURL = "TRAINYARD_TEMPORAL_DATABASE_URL"
