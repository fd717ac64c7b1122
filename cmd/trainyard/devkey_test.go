package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

func TestEnsureDefaultKeyGeneratesAndKeepsOneKey(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	cfg := config.Config{DataDir: t.TempDir(), DefaultEntity: "local"}

	first, err := ensureDefaultKey(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.Key == "" || first.Entity != "local" || !strings.HasPrefix(first.Source, "generated") {
		t.Fatalf("first key = %+v", first)
	}
	path := filepath.Join(cfg.DataDir, devKeyFile)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, want 0600", info.Mode().Perm())
	}
	acct, err := db.Authenticate(ctx, first.Key)
	if err != nil || acct.Entity != "local" {
		t.Fatalf("Authenticate(generated key) = %+v, %v", acct, err)
	}

	again, err := ensureDefaultKey(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again.Key != first.Key || !strings.HasPrefix(again.Source, "saved in") {
		t.Fatalf("restart gave %+v, want the saved key %s", again, first.Key)
	}

	// A fresh database (e.g. reset) with the same data dir: the saved key is
	// registered again, so the key a developer copied keeps working.
	fresh := pgtest.New(t)
	reset, err := ensureDefaultKey(ctx, fresh, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if reset.Key != first.Key {
		t.Fatalf("after a database reset the key changed to %s", reset.Key)
	}
	if _, err := fresh.Authenticate(ctx, first.Key); err != nil {
		t.Fatalf("saved key not registered in the fresh database: %v", err)
	}
}

func TestEnsureDefaultKeyUsesTheConfiguredKey(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	cfg := config.Config{DataDir: t.TempDir(), DefaultEntity: "team", DevAPIKey: "dev-key-for-tests"}
	for range 2 { // the second run finds it registered
		k, err := ensureDefaultKey(ctx, db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if k.Key != cfg.DevAPIKey || !strings.Contains(k.Source, config.EnvDevAPIKey) {
			t.Fatalf("key = %+v", k)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, devKeyFile)); !os.IsNotExist(err) {
		t.Fatalf("a configured key must not be written to disk (stat err %v)", err)
	}
	acct, err := db.Authenticate(ctx, cfg.DevAPIKey)
	if err != nil || acct.Entity != "team" {
		t.Fatalf("Authenticate = %+v, %v", acct, err)
	}

	// The same key cannot become another entity's default key.
	other := cfg
	other.DefaultEntity = "someone-else"
	if _, err := ensureDefaultKey(ctx, db, other); err == nil || !strings.Contains(err.Error(), `belongs to entity "team"`) {
		t.Fatalf("reusing another entity's key: err = %v", err)
	}

	bad := cfg
	bad.DevAPIKey = "has spaces in it"
	if _, err := ensureDefaultKey(ctx, db, bad); err == nil {
		t.Fatal("a key with whitespace was accepted")
	}
}

func TestEnsureAccountIsIdempotent(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	a, err := ensureAccount(ctx, db, "acme")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ensureAccount(ctx, db, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID {
		t.Fatalf("two accounts for one entity: %s, %s", a.ID, b.ID)
	}
}
