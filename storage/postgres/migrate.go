package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// VersionTable is the table that records the applied migration. It is not
// schema-qualified on purpose: it lives in the first schema of the
// connection's search_path, next to the tables it versions, so several
// schemas (one per test) each keep their own. Test helpers that empty a
// schema for reuse must keep it.
const VersionTable = "trainyard_schema_version"

// Migrate brings the schema up to date. It is idempotent, and safe when
// several processes migrate at once: tern holds a session-level advisory lock
// (pg_advisory_lock) while it reads the version and applies migrations, so a
// second migrator waits, then finds nothing left to do. Each migration runs
// in its own transaction.
func (db *DB) Migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return translate(err, "connection for migration")
	}
	err = runMigrations(ctx, conn.Conn())
	if err != nil {
		// A failed or cancelled run may leave the session holding the
		// advisory lock or an aborted transaction; close the connection so
		// the pool never hands that session out again.
		_ = conn.Conn().Close(context.Background())
	}
	conn.Release()
	return err
}

func runMigrations(ctx context.Context, conn *pgx.Conn) error {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return fmt.Errorf("prepare migrations: %w", err)
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("open embedded migrations: %w", err)
	}
	if err := m.LoadMigrations(sub); err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	return nil
}

// SchemaVersion returns the number of applied migrations (for `migrate`
// status output and tests).
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int32
	err := db.pool.QueryRow(ctx, "SELECT version FROM "+VersionTable).Scan(&v)
	if err != nil {
		return 0, translate(err, "schema version")
	}
	return int(v), nil
}
