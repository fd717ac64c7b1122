// Package pgtest gives each test its own migrated PostgreSQL schema on the
// test server, so tests run in parallel without seeing each other's rows.
//
// The server is $TRAINYARD_TEST_DATABASE_URL, by default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. When it does
// not answer, tests fail (they never skip): run `make test`, which starts a
// server when none is running.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trainyard/trainyard/storage/postgres"
)

// EnvURL names the environment variable with the test server's URL.
const EnvURL = "TRAINYARD_TEST_DATABASE_URL"

// DefaultURL is the test server used when EnvURL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// schemaPrefix starts the name of every schema this package creates; the
// creation time follows, so schemas left behind by a killed test run can be
// recognised and dropped later.
const schemaPrefix = "pgtest_"

// staleAfter is the age past which a left-over test schema is dropped.
const staleAfter = time.Hour

var admin struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// New returns a DB on a fresh schema of the test server, migrated, whose
// connections all use that schema. The DB is closed and the schema dropped
// when the test ends.
func New(t testing.TB) *postgres.DB {
	t.Helper()
	u := newSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", redact(u), err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return db
}

// URL returns the connection string of a fresh, migrated schema (its
// search_path set in the URL) for tests that hand a database to another
// process. The schema is dropped when the test ends, after cleanups
// registered later (such as stopping that process) have run.
func URL(t testing.TB) string {
	t.Helper()
	u := newSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", redact(u), err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return u
}

// EmptyURL returns the connection string of a fresh schema without any
// migration applied, for tests of migration itself. It is dropped when the
// test ends.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return newSchema(t)
}

// newSchema creates an empty schema, registers its removal and returns the
// server URL with search_path pointing at it.
func newSchema(t testing.TB) string {
	t.Helper()
	base := baseURL()
	pool := adminPool(t, base)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	schema := fmt.Sprintf("%s%d_%s", schemaPrefix, time.Now().Unix(), hex.EncodeToString(b[:]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	u, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

func baseURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// adminPool connects once per process to the test server, to create and
// drop schemas, and sweeps schemas that killed runs left behind.
func adminPool(t testing.TB, base string) *pgxpool.Pool {
	t.Helper()
	admin.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cfg, err := pgxpool.ParseConfig(base)
		if err != nil {
			admin.err = fmt.Errorf("invalid %s: %w", EnvURL, err)
			return
		}
		cfg.MaxConns = 4
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			err = pool.Ping(ctx)
		}
		if err != nil {
			admin.err = fmt.Errorf("no PostgreSQL answers at %s (%v); run `make test`, which starts one, "+
				"or point %s at a server", redact(base), err, EnvURL)
			return
		}
		admin.pool = pool
		dropStale(ctx, pool)
	})
	if admin.err != nil {
		t.Fatalf("pgtest: %v", admin.err)
	}
	return admin.pool
}

// dropStale drops test schemas older than staleAfter. Failures are ignored:
// another process may be dropping the same schema.
func dropStale(ctx context.Context, pool *pgxpool.Pool) {
	rows, err := pool.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE $1`, schemaPrefix+"%")
	if err != nil {
		return
	}
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			names = append(names, n)
		}
	}
	rows.Close()
	cutoff := time.Now().Add(-staleAfter).Unix()
	for _, n := range names {
		var created int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(n, schemaPrefix), "%d_", &created); err != nil || created > cutoff {
			continue
		}
		_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+n+" CASCADE")
	}
}

// withSearchPath adds search_path to a postgres:// URL or key=value DSN.
func withSearchPath(base, schema string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return "", fmt.Errorf("invalid %s: %w", EnvURL, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return base + " search_path=" + schema, nil
}

// redact hides the password of a URL for messages.
func redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return "the configured server"
}
