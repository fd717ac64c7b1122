// Package pgtest gives each test its own migrated PostgreSQL schema on the
// test server, so tests run in parallel without seeing each other's rows.
//
// The server is $TRAINYARD_TEST_DATABASE_URL, by default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. When it does
// not answer, tests fail (they never skip): run `make test`, which starts a
// server when none is running.
//
// Migrating a schema costs far more than emptying one, so a schema that New
// or URL handed out is truncated when its test ends and handed to the next
// test of the same process. Every schema this process owns is leased with a session
// advisory lock; schemas whose lease is free belong to dead processes and are
// dropped when the next test process starts.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/storage/postgres"
)

// EnvURL names the environment variable with the test server's URL.
const EnvURL = "TRAINYARD_TEST_DATABASE_URL"

// DefaultURL is the test server used when EnvURL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// opTimeout bounds each schema operation.
const opTimeout = time.Minute

// spare holds migrated, empty schemas that New can hand out again.
var spare struct {
	mu    sync.Mutex
	names []string
}

// New returns a DB on an empty, migrated schema of the test server that no
// other test uses; all of its connections use that schema. The DB is closed
// when the test ends, and the schema emptied for reuse.
func New(t testing.TB) *postgres.DB {
	t.Helper()
	u := migrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", redact(u), err)
	}
	t.Cleanup(db.Close) // before the schema is emptied: cleanups run last-registered first
	return db
}

// URL returns the connection string of an empty, migrated schema (its
// search_path set in the URL) for tests that hand a database to another
// process. The schema is emptied for reuse when the test ends, after cleanups
// registered later (such as stopping that process) have run.
func URL(t testing.TB) string {
	t.Helper()
	return migrated(t)
}

// migrated returns the URL of a schema no other test uses: a spare one, or a
// new one it migrates. When the test ends the schema is emptied and kept for
// the next test of this process, or dropped if emptying fails.
func migrated(t testing.TB) string {
	t.Helper()
	a := adminOf(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	schema := takeSpare()
	fresh := schema == ""
	if fresh {
		var err error
		if schema, err = a.create(ctx); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	u, err := withSearchPath(a.base, schema)
	if err == nil && fresh {
		err = migrate(ctx, u)
	}
	if err != nil {
		a.drop(ctx, schema)
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := a.empty(ctx, schema); err != nil {
			t.Logf("pgtest: empty schema %s: %v; dropping it", schema, err)
			a.drop(ctx, schema)
			return
		}
		putSpare(schema)
	})
	return u
}

func migrate(ctx context.Context, u string) error {
	db, err := postgres.Open(ctx, u)
	if err != nil {
		return fmt.Errorf("open %s: %w", redact(u), err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// EmptyURL returns the connection string of a fresh schema without any
// migration applied, for tests of migration itself. It is dropped when the
// test ends.
func EmptyURL(t testing.TB) string {
	t.Helper()
	a := adminOf(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	schema, err := a.create(ctx)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		a.drop(ctx, schema)
	})
	u, err := withSearchPath(a.base, schema)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

func takeSpare() string {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	n := len(spare.names)
	if n == 0 {
		return ""
	}
	s := spare.names[n-1]
	spare.names = spare.names[:n-1]
	return s
}

func putSpare(schema string) {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	spare.names = append(spare.names, schema)
}

func baseURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
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
