package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

func TestAccounts(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()

	a, err := db.CreateAccount(ctx, "my-team")
	mustNil(t, err)
	if a.ID == "" || a.Entity != "my-team" || a.CreatedAt.IsZero() {
		t.Fatalf("CreateAccount = %+v", a)
	}
	_, err = db.CreateAccount(ctx, "my-team")
	wantCode(t, err, trainyard.ECONFLICT)
	_, err = db.CreateAccount(ctx, " ")
	wantCode(t, err, trainyard.EINVALID)
	_, err = db.CreateAccount(ctx, "nul\x00byte") // text cannot hold NUL
	wantCode(t, err, trainyard.EINVALID)

	got, err := db.FindAccountByEntity(ctx, "my-team")
	mustNil(t, err)
	if got.ID != a.ID || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("FindAccountByEntity = %+v, want %+v", got, a)
	}
	_, err = db.FindAccountByEntity(ctx, "nobody")
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	a := newAccount(t, db)
	b := newAccount(t, db)

	plain, key, err := db.CreateAPIKey(ctx, a.ID, "")
	mustNil(t, err)
	if !strings.HasPrefix(plain, "ty_") || len(plain) < 40 {
		t.Fatalf("generated key %q: want ty_ and at least 256 bits", plain)
	}
	if key.AccountID != a.ID || !strings.HasPrefix(plain, key.Prefix) || len(key.Prefix) < 4 || len(key.Prefix) > 11 {
		t.Fatalf("key = %+v for %q", key, plain)
	}
	plain2, _, err := db.CreateAPIKey(ctx, a.ID, "")
	mustNil(t, err)
	if plain2 == plain {
		t.Fatal("two generated keys are equal")
	}

	got, err := db.Authenticate(ctx, plain)
	mustNil(t, err)
	if got.ID != a.ID || got.Entity != a.Entity {
		t.Fatalf("Authenticate = %+v, want account %+v", got, a)
	}
	for _, bad := range []string{"", "ty_nope", plain + "x", strings.Repeat("k", 10000)} {
		_, err = db.Authenticate(ctx, bad)
		wantCode(t, err, trainyard.EUNAUTHORIZED)
	}

	// A configured development key is used as given, once.
	dev, _, err := db.CreateAPIKey(ctx, b.ID, "dev-key-0123456789")
	mustNil(t, err)
	if dev != "dev-key-0123456789" {
		t.Fatalf("dev key = %q", dev)
	}
	got, err = db.Authenticate(ctx, dev)
	mustNil(t, err)
	if got.ID != b.ID {
		t.Fatalf("dev key authenticates %s, want %s", got.ID, b.ID)
	}
	_, _, err = db.CreateAPIKey(ctx, a.ID, "dev-key-0123456789")
	wantCode(t, err, trainyard.ECONFLICT)
	_, _, err = db.CreateAPIKey(ctx, a.ID, "has space")
	wantCode(t, err, trainyard.EINVALID)

	_, _, err = db.CreateAPIKey(ctx, fakeID, "")
	wantCode(t, err, trainyard.ENOTFOUND)
	_, _, err = db.CreateAPIKey(ctx, "not-a-uuid", "")
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestAuthenticateRecordsUseAtMostOncePerMinute(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	a := newAccount(t, db)
	plain, key, err := db.CreateAPIKey(ctx, a.ID, "")
	mustNil(t, err)
	pool := postgres.PoolOf(db)
	lastUsed := func() *time.Time {
		var ts *time.Time
		mustNil(t, pool.QueryRow(ctx, `SELECT last_used_at FROM api_keys WHERE id = $1`, key.ID).Scan(&ts))
		return ts
	}
	if lastUsed() != nil {
		t.Fatal("a new key has a last use")
	}
	_, err = db.Authenticate(ctx, plain)
	mustNil(t, err)
	first := lastUsed()
	if first == nil {
		t.Fatal("Authenticate did not record the use")
	}
	_, err = db.Authenticate(ctx, plain)
	mustNil(t, err)
	if second := lastUsed(); !second.Equal(*first) {
		t.Fatalf("last_used_at rewritten within a minute: %v then %v", first, second)
	}
	// An old use is refreshed.
	_, err = pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now() - interval '2 minutes' WHERE id = $1`, key.ID)
	mustNil(t, err)
	_, err = db.Authenticate(ctx, plain)
	mustNil(t, err)
	if third := lastUsed(); !third.After(*first) {
		t.Fatalf("last_used_at not refreshed after two minutes: %v", third)
	}
	// A revoked key no longer authenticates.
	_, err = pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, key.ID)
	mustNil(t, err)
	_, err = db.Authenticate(ctx, plain)
	wantCode(t, err, trainyard.EUNAUTHORIZED)
}

func TestConcurrentAccountCreation(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	codes := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.CreateAccount(ctx, "racer")
			codes[i] = trainyard.ErrorCode(err)
		}()
	}
	wg.Wait()
	wantOneWinner(t, codes, "accounts created")
}

func BenchmarkAuthenticate(b *testing.B) {
	db := pgtest.New(b)
	ctx := context.Background()
	a := newAccount(b, db)
	plain, _, err := db.CreateAPIKey(ctx, a.ID, "")
	mustNil(b, err)
	for b.Loop() {
		if _, err := db.Authenticate(ctx, plain); err != nil {
			b.Fatal(err)
		}
	}
}
