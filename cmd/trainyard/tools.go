package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"go.uber.org/zap"
	"io"
	"os"
	"time"

	"github.com/trainyard/trainyard/engine/pretrain"
	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/workflows"
)

// runMigrate is `trainyard migrate`: bring the schema up to date and report
// its version.
func runMigrate(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := loadConfig("migrate", args, config.ModeDatabase, nil)
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg.DatabaseURL, cfg.DBTimeout)
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	printf(stdout, "schema is at version %d\n", v)
	if cfg.Temporal.Address == "" {
		printf(stdout, "TEMPORAL_ADDRESS is unset: search attributes not checked\n")
		return nil
	}
	// An external Temporal needs trainyard's search attributes once per
	// namespace; `serve` registers them in its embedded one itself.
	tc, err := dialTemporal(ctx, cfg.Temporal.Address, cfg.Temporal.Namespace, zap.NewNop())
	if err != nil {
		return err
	}
	defer tc.Close()
	if err := workflows.RegisterSearchAttributes(ctx, tc, cfg.Temporal.Namespace); err != nil {
		return fmt.Errorf("register trainyard's search attributes: %w", err)
	}
	printf(stdout, "search attributes registered in Temporal namespace %s\n", cfg.Temporal.Namespace)
	return nil
}

// runKeys is `trainyard keys create --entity NAME`: create the account if
// needed and print a new key on stdout (alone, for KEY=$(...)).
func runKeys(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usageError{"usage: trainyard keys create --entity NAME"}
	}
	var entity string
	cfg, err := loadConfig("keys create", args[1:], config.ModeDatabase, func(fs *flag.FlagSet) {
		fs.StringVar(&entity, "entity", "", "the account (W&B entity) the key belongs to; created if missing")
	})
	if err != nil {
		return err
	}
	if entity == "" {
		return usageError{"trainyard keys create: --entity is required"}
	}
	db, err := openDatabase(ctx, cfg.DatabaseURL, cfg.DBTimeout)
	if err != nil {
		return err
	}
	defer db.Close()
	acct, err := ensureAccount(ctx, db, entity)
	if err != nil {
		return fmt.Errorf("account %q: %w", entity, err)
	}
	key, meta, err := db.CreateAPIKey(ctx, acct.ID, "")
	if err != nil {
		return fmt.Errorf("create a key for %q: %w", entity, err)
	}
	fmt.Fprintf(os.Stderr, "created key %s… for entity %q (shown once; only its hash is stored)\n", meta.Prefix, acct.Entity)
	printf(stdout, "%s\n", key)
	return nil
}

// runPretrain is `trainyard pretrain`: train the built-in base model with
// the engine's recipe (engine/pretrain.DefaultOptions) and write it where
// the engine embeds it. The recipe itself lives with the engine; the flags
// only say where data comes from and results go.
func runPretrain(ctx context.Context, args []string, _ io.Writer) error {
	opts := pretrain.DefaultOptions()
	fs := flag.NewFlagSet("trainyard pretrain", flag.ContinueOnError)
	fs.StringVar(&opts.OutDir, "out", opts.OutDir, "directory for model.safetensors and config.json")
	fs.StringVar(&opts.InitFrom, "init-from", opts.InitFrom, "start from the weights in this directory instead of a random init")
	fs.IntVar(&opts.SaveEvery, "save-every", opts.SaveEvery, "also save every this many steps (0: only after each stage)")
	fs.StringVar(&opts.FortuneDir, "fortunes", opts.FortuneDir, "Debian fortunes directory (apt-get install fortunes-min)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("trainyard pretrain: unexpected arguments %q", fs.Args())}
	}
	start := time.Now()
	if err := pretrain.Run(ctx, opts); err != nil {
		return fmt.Errorf("pretrain: %w", err)
	}
	fmt.Fprintf(os.Stderr, "pretrained in %s; weights in %s\n", time.Since(start).Round(time.Second), opts.OutDir)
	return nil
}
