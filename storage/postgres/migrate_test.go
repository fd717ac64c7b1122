package postgres_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

func migrationCount(t *testing.T) int {
	entries, err := os.ReadDir("migrations")
	mustNil(t, err)
	return len(entries)
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t) // already migrated once
	ctx := context.Background()
	mustNil(t, db.Migrate(ctx))
	mustNil(t, db.Migrate(ctx))
	v, err := db.SchemaVersion(ctx)
	mustNil(t, err)
	if v != migrationCount(t) {
		t.Fatalf("schema version = %d, want %d", v, migrationCount(t))
	}
}

func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	u := pgtest.EmptyURL(t)
	ctx := context.Background()
	const n = 4
	dbs := make([]*postgres.DB, n)
	for i := range dbs {
		db, err := postgres.Open(ctx, u)
		mustNil(t, err)
		t.Cleanup(db.Close)
		dbs[i] = db
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Migrate(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
	}
	v, err := dbs[0].SchemaVersion(ctx)
	mustNil(t, err)
	if v != migrationCount(t) {
		t.Fatalf("schema version = %d, want %d", v, migrationCount(t))
	}
	// The schema works: a store call succeeds.
	if _, err := dbs[1].CreateAccount(ctx, "after-migration"); err != nil {
		t.Fatal(err)
	}
}

func TestSchemaVersionBeforeMigrate(t *testing.T) {
	t.Parallel()
	db, err := postgres.Open(context.Background(), pgtest.EmptyURL(t))
	mustNil(t, err)
	defer db.Close()
	_, err = db.SchemaVersion(context.Background())
	if err == nil {
		t.Fatal("SchemaVersion on an empty schema: want an error")
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := postgres.Open(ctx, "postgres://user:secret@[::1")
	wantCode(t, err, trainyard.EINVALID)
	if msg := trainyard.ErrorMessage(err); msg == "" || contains(msg, "secret") {
		t.Fatalf("message %q must not echo the password", msg)
	}
	// Port 1 refuses connections: the store reports the database as
	// unavailable rather than an internal error.
	_, err = postgres.Open(ctx, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
	wantCode(t, err, trainyard.EUNAVAILABLE)
}

func TestPingAndCancelledContext(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	mustNil(t, db.Ping(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.Ping(ctx)
	if !errorsIsCanceled(err) {
		t.Fatalf("Ping with a cancelled context = %v, want context.Canceled in the chain", err)
	}
	_, err = db.FindAccountByEntity(ctx, "x")
	if !errorsIsCanceled(err) {
		t.Fatalf("FindAccountByEntity with a cancelled context = %v, want context.Canceled in the chain", err)
	}
}
