// Command trainyard runs the trainyard training service and its tools.
//
//	trainyard serve          everything in one process on embedded infrastructure (make run)
//	trainyard api            the HTTP API against external Temporal, PostgreSQL and S3
//	trainyard worker         the Temporal worker against the same
//	trainyard infer          chat completions for the base models it holds, routed to by api
//	trainyard migrate        apply the database migrations
//	trainyard keys create    create an account (if needed) and print a new API key
//	trainyard temporal       a Temporal server of its own, on PostgreSQL
//	trainyard models list    the base models, with size, dtype, context and memory
//	trainyard pretrain       pretrain the built-in base model
//
// Configuration comes from environment variables (see internal/config and
// README.md); a few have flags too (run `trainyard <command> -h`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/trainyard/trainyard/internal/s3gw"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run API, worker, Temporal, its Web UI and S3 in one process (development)", runServe},
		{"api", "run the HTTP API (production: external Temporal, PostgreSQL and S3)", runAPI},
		{"worker", "run the Temporal worker (production)", runWorker},
		{"infer", "serve chat completions for the API (production: PostgreSQL and S3)", runInfer},
		{"migrate", "apply the database migrations", runMigrate},
		{"keys", "manage API keys: keys create --entity NAME", runKeys},
		{"models", "list the base models (snapshots of TRAINYARD_MODELS_DIR and built-in): models list", runModels},
		{"pretrain", "pretrain the built-in base model (engine/pretrain)", runPretrain},
		{"temporal", "run a Temporal server on PostgreSQL (single host; trainyard's topology test)", runTemporal},
	}
}

func main() {
	// `trainyard serve` runs the embedded S3 gateway as a child process of
	// this same binary; in that child this call serves and never returns.
	s3gw.ServeIfChild()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "trainyard:", err)
		}
		stop()
		os.Exit(exitCode(err))
	}
}

// usageError marks a mistake in the command line (exit status 2).
type usageError struct{ msg string }

// Error returns the message shown with the usage.
func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return usageError{"a command is required"}
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	usage(stderr)
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: trainyard <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nConfiguration is read from the environment; see README.md.")
}
