package trainyard

import (
	"context"
	"time"
)

// Account owns models, checkpoints and jobs. Its Entity is the W&B "entity"
// (team or user name) that appears in model names and artifact URLs.
type Account struct {
	ID        string
	Entity    string
	CreatedAt time.Time
}

// APIKey is a credential of an account. Only a hash of the secret is stored;
// the plaintext is shown once, when the key is created.
type APIKey struct {
	ID         string
	AccountID  string
	Prefix     string // the first characters of the key, for listing and lookup
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// AccountStore persists accounts and their API keys.
type AccountStore interface {
	// CreateAccount creates an account; ECONFLICT if the entity is taken.
	CreateAccount(ctx context.Context, entity string) (*Account, error)
	// FindAccountByEntity returns the account with that entity or ENOTFOUND.
	FindAccountByEntity(ctx context.Context, entity string) (*Account, error)
	// CreateAPIKey issues a new key for the account and returns its plaintext,
	// which is never stored. If plaintext is non-empty it is used as the key
	// (for a configured development key); ECONFLICT if it already exists.
	CreateAPIKey(ctx context.Context, accountID, plaintext string) (string, *APIKey, error)
	// Authenticate returns the account of a valid, unrevoked key or
	// EUNAUTHORIZED.
	Authenticate(ctx context.Context, plaintext string) (*Account, error)
}
