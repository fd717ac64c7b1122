package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trainyard/trainyard"
)

// DefaultOpTimeout bounds each database operation when Options.OpTimeout is
// zero: a statement, or a whole transaction.
const DefaultOpTimeout = 5 * time.Second

// errOpTimeout is the cause of a context that an operation's deadline ended:
// the database did not answer in time (frozen, or overloaded), which callers
// see as EUNAVAILABLE rather than a cancellation.
var errOpTimeout = errors.New("the database did not answer in time")

// pool is the connection pool with a deadline on every operation, so that
// no caller (an API request above all) waits on a database that stopped
// answering longer than the deadline. A caller's own earlier deadline
// stands.
type pool struct {
	*pgxpool.Pool
	timeout time.Duration
}

// opCtx derives the context of one operation.
func (p pool) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= p.timeout {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, p.timeout, errOpTimeout)
}

// timedOut marks err as the operation's deadline when that is what ended it.
func timedOut(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errOpTimeout) {
		return fmt.Errorf("%w: %w", errOpTimeout, err)
	}
	return err
}

// QueryRow runs a query of one row; its deadline lasts until Scan.
func (p pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel := p.opCtx(ctx)
	return row{Row: p.Pool.QueryRow(ctx, sql, args...), ctx: ctx, cancel: cancel}
}

// Query runs a query; its deadline lasts until the rows are closed.
func (p pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel := p.opCtx(ctx)
	r, err := p.Pool.Query(ctx, sql, args...)
	if err != nil {
		cancel()
		return nil, timedOut(ctx, err)
	}
	return &rows{Rows: r, ctx: ctx, cancel: cancel}, nil
}

// Exec runs a statement.
func (p pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := p.opCtx(ctx)
	defer cancel()
	tag, err := p.Pool.Exec(ctx, sql, args...)
	return tag, timedOut(ctx, err)
}

// beginFunc runs fn in a transaction that has one deadline as a whole: its
// context goes to fn, for every statement of the transaction.
func (p pool) beginFunc(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	ctx, cancel := p.opCtx(ctx)
	defer cancel()
	err := timedOut(ctx, pgx.BeginFunc(ctx, p.Pool, func(tx pgx.Tx) error { return fn(ctx, tx) }))
	if errors.Is(err, errOpTimeout) && trainyard.ErrorCode(err) != trainyard.EUNAVAILABLE {
		// fn translated its statement's error before anyone knew the
		// deadline was the cause.
		return trainyard.WrapError(trainyard.EUNAVAILABLE, err, "the database did not answer in time")
	}
	return err
}

type row struct {
	pgx.Row
	ctx    context.Context
	cancel context.CancelFunc
}

func (r row) Scan(dest ...any) error {
	defer r.cancel()
	return timedOut(r.ctx, r.Row.Scan(dest...))
}

type rows struct {
	pgx.Rows
	ctx    context.Context
	cancel context.CancelFunc
}

func (r *rows) Close() {
	r.Rows.Close()
	r.cancel()
}

func (r *rows) Err() error { return timedOut(r.ctx, r.Rows.Err()) }
