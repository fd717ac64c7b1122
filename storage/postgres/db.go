// Package postgres implements trainyard's stores (accounts, models and
// checkpoints, logs, jobs, events) on PostgreSQL with pgx. All SQL of the
// project lives in this package, and driver errors are translated here, once,
// into trainyard error codes.
package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trainyard/trainyard"
)

// Compile-time checks that DB implements every store interface.
var (
	_ trainyard.AccountStore = (*DB)(nil)
	_ trainyard.ModelStore   = (*DB)(nil)
	_ trainyard.LogStore     = (*DB)(nil)
	_ trainyard.JobStore     = (*DB)(nil)
	_ trainyard.EventStore   = (*DB)(nil)
)

// DB is a pool of connections to one trainyard database. It is safe for
// concurrent use.
type DB struct {
	pool pool
}

// Options tune a DB. The zero value is usable.
type Options struct {
	// OpTimeout bounds each statement or transaction (DefaultOpTimeout);
	// past it the call fails with EUNAVAILABLE.
	OpTimeout time.Duration
}

// Open connects to the database at databaseURL (a postgres:// URL or a
// key=value DSN; a search_path parameter selects the schema) and checks that
// it answers. It does not migrate; call Migrate.
func Open(ctx context.Context, databaseURL string) (*DB, error) {
	return OpenWith(ctx, databaseURL, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, databaseURL string, opts Options) (*DB, error) {
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = DefaultOpTimeout
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// The parse error can echo the URL, password included; keep it out.
		return nil, trainyard.Errorf(trainyard.EINVALID, "invalid database URL")
	}
	pgPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create postgres pool: %w", err)
	}
	db := &DB{pool: pool{Pool: pgPool, timeout: opts.OpTimeout}}
	if err := db.Ping(ctx); err != nil {
		pgPool.Close()
		return nil, err
	}
	return db, nil
}

// Ping checks that the database answers a query (system-check).
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := db.pool.opCtx(ctx)
	defer cancel()
	if err := db.pool.Ping(ctx); err != nil {
		return translate(timedOut(ctx, err), "ping database")
	}
	return nil
}

// Close closes every connection of the pool. It waits for connections in use
// to be released.
func (db *DB) Close() { db.pool.Close() }

// inTx runs fn in a transaction, committing when it returns nil and rolling
// back otherwise. fn gets the transaction's context, which carries its
// deadline: its statements must use that one, not the caller's.
func (db *DB) inTx(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	return db.pool.beginFunc(ctx, fn)
}
