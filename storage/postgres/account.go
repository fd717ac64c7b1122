package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard"
)

// Generated API keys are "ty_" followed by the base62 form of 32 random
// bytes (256 bits of entropy).
const (
	keyPrefix     = "ty_"
	keyRandBytes  = 32
	keyMaxLen     = 256
	shownPrefixes = 11 // characters of a key kept in clear for listings
)

// lastUsedGranularity bounds how often Authenticate writes last_used_at: at
// most once a minute per key, so authenticating stays a read in steady state.
const lastUsedGranularity = "1 minute"

// CreateAccount creates an account; ECONFLICT if the entity is taken.
func (db *DB) CreateAccount(ctx context.Context, entity string) (*trainyard.Account, error) {
	if strings.TrimSpace(entity) == "" {
		return nil, trainyard.Errorf(trainyard.EINVALID, "entity must not be empty")
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	a := &trainyard.Account{ID: id, Entity: entity}
	err = db.pool.QueryRow(ctx,
		`INSERT INTO accounts (id, entity) VALUES ($1, $2) RETURNING created_at`,
		id, entity).Scan(&a.CreatedAt)
	if err != nil {
		return nil, translate(err, "account %q", entity)
	}
	return a, nil
}

// FindAccountByEntity returns the account with that entity or ENOTFOUND.
func (db *DB) FindAccountByEntity(ctx context.Context, entity string) (*trainyard.Account, error) {
	a := &trainyard.Account{}
	err := db.pool.QueryRow(ctx,
		`SELECT id, entity, created_at FROM accounts WHERE entity = $1`,
		entity).Scan(&a.ID, &a.Entity, &a.CreatedAt)
	if err != nil {
		return nil, translate(err, "account %q", entity)
	}
	return a, nil
}

// CreateAPIKey issues a key for the account and returns its plaintext, which
// is never stored: only its SHA-256 and a short prefix are. A non-empty
// plaintext (a configured development key) is used as given; ECONFLICT if
// that key already exists.
func (db *DB) CreateAPIKey(ctx context.Context, accountID, plaintext string) (string, *trainyard.APIKey, error) {
	acct, err := parseID("account", accountID)
	if err != nil {
		return "", nil, err
	}
	if plaintext == "" {
		if plaintext, err = generateKey(); err != nil {
			return "", nil, err
		}
	} else if len(plaintext) > keyMaxLen || strings.ContainsAny(plaintext, " \t\r\n") {
		return "", nil, trainyard.Errorf(trainyard.EINVALID, "an API key must be at most %d characters without whitespace", keyMaxLen)
	}
	id, err := newID()
	if err != nil {
		return "", nil, err
	}
	k := &trainyard.APIKey{ID: id, AccountID: acct, Prefix: shownPrefix(plaintext)}
	hash := sha256.Sum256([]byte(plaintext))
	err = db.pool.QueryRow(ctx,
		`INSERT INTO api_keys (id, account_id, prefix, hash) VALUES ($1, $2, $3, $4) RETURNING created_at`,
		id, acct, k.Prefix, hash[:]).Scan(&k.CreatedAt)
	if err != nil {
		return "", nil, translate(err, "API key")
	}
	return plaintext, k, nil
}

// Authenticate returns the account of a valid, unrevoked key or
// EUNAUTHORIZED. One statement looks the key up by hash and, at most once a
// minute, records its use.
func (db *DB) Authenticate(ctx context.Context, plaintext string) (*trainyard.Account, error) {
	if plaintext == "" || len(plaintext) > keyMaxLen {
		return nil, trainyard.Errorf(trainyard.EUNAUTHORIZED, "invalid API key")
	}
	hash := sha256.Sum256([]byte(plaintext))
	a := &trainyard.Account{}
	err := db.pool.QueryRow(ctx, `
		WITH k AS (
			SELECT id, account_id, last_used_at FROM api_keys
			WHERE hash = $1 AND revoked_at IS NULL
		), touched AS (
			UPDATE api_keys SET last_used_at = now()
			FROM k
			WHERE api_keys.id = k.id
			  AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '`+lastUsedGranularity+`')
		)
		SELECT a.id, a.entity, a.created_at FROM k JOIN accounts a ON a.id = k.account_id`,
		hash[:]).Scan(&a.ID, &a.Entity, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, trainyard.Errorf(trainyard.EUNAUTHORIZED, "invalid API key")
	}
	if err != nil {
		return nil, translate(err, "API key")
	}
	return a, nil
}

// generateKey returns a new random key.
func generateKey() (string, error) {
	var b [keyRandBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate API key: %w", err)
	}
	return keyPrefix + new(big.Int).SetBytes(b[:]).Text(62), nil
}

// shownPrefix is the part of a key kept in clear: at most shownPrefixes
// characters and at most a quarter of the key, so a short configured key
// does not give most of itself away.
func shownPrefix(key string) string {
	n := min(shownPrefixes, len(key)/4)
	return key[:n]
}
