package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/config"
)

// devKeyFile is where `serve` keeps the generated key of the default
// account, so a restart prints the same key.
const devKeyFile = "dev-api-key"

// devKey is the default account's key and where it came from.
type devKey struct {
	Key, Entity, Source string
}

// ensureAccount returns the account of entity, creating it when missing.
// Two processes creating it at once both end up with the same account.
func ensureAccount(ctx context.Context, store trainyard.AccountStore, entity string) (*trainyard.Account, error) {
	acct, err := store.FindAccountByEntity(ctx, entity)
	if trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		return acct, err
	}
	acct, err = store.CreateAccount(ctx, entity)
	if trainyard.ErrorCode(err) == trainyard.ECONFLICT {
		return store.FindAccountByEntity(ctx, entity)
	}
	return acct, err
}

// ensureDefaultKey makes sure the default account exists and has a usable
// key: TRAINYARD_DEV_API_KEY when set, else the key saved in the data dir,
// else a new one that is then saved (mode 0600). A saved or configured key
// missing from the database (e.g. after the database was reset) is added
// again, so the key a developer copied keeps working.
func ensureDefaultKey(ctx context.Context, store trainyard.AccountStore, cfg config.Config) (devKey, error) {
	acct, err := ensureAccount(ctx, store, cfg.DefaultEntity)
	if err != nil {
		return devKey{}, fmt.Errorf("default account %q: %w", cfg.DefaultEntity, err)
	}
	path := filepath.Join(cfg.DataDir, devKeyFile)
	k := devKey{Key: cfg.DevAPIKey, Entity: acct.Entity, Source: "from " + config.EnvDevAPIKey}
	if k.Key == "" {
		saved, err := os.ReadFile(path)
		switch {
		case err == nil:
			k.Key, k.Source = strings.TrimSpace(string(saved)), "saved in "+path
		case !errors.Is(err, os.ErrNotExist):
			return k, fmt.Errorf("read the saved dev key: %w", err)
		}
	}
	if k.Key == "" {
		plaintext, _, err := store.CreateAPIKey(ctx, acct.ID, "")
		if err != nil {
			return k, fmt.Errorf("create a key for %q: %w", acct.Entity, err)
		}
		if err := writeSecret(path, plaintext); err != nil {
			return k, err
		}
		k.Key, k.Source = plaintext, "generated, saved in "+path
		return k, nil
	}
	owner, err := store.Authenticate(ctx, k.Key)
	switch {
	case err == nil && owner.ID == acct.ID:
		return k, nil
	case err == nil:
		return k, fmt.Errorf("the dev key (%s) belongs to entity %q, not the default entity %q", k.Source, owner.Entity, acct.Entity)
	case trainyard.ErrorCode(err) != trainyard.EUNAUTHORIZED:
		return k, fmt.Errorf("check the dev key: %w", err)
	}
	if _, _, err := store.CreateAPIKey(ctx, acct.ID, k.Key); err != nil {
		if trainyard.ErrorCode(err) == trainyard.ECONFLICT {
			return k, fmt.Errorf("the dev key (%s) exists but was revoked; unset it or remove %s", k.Source, path)
		}
		return k, fmt.Errorf("register the dev key (%s): %w", k.Source, err)
	}
	return k, nil
}

// writeSecret writes s to path with mode 0600, atomically, so a crash
// never leaves a truncated key behind.
func writeSecret(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s+"\n"), 0o600); err != nil {
		return fmt.Errorf("save the dev key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save the dev key: %w", err)
	}
	return nil
}
