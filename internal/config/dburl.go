package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// databaseURLFile, in the data dir, holds the DATABASE_URL that `serve`
// last ran with. The database of a checkout has a name of its own (see
// scripts/ensure-postgres.sh), so the tools (`keys`, `migrate`) read it from
// here when DATABASE_URL is unset and find the checkout's database the way
// `make run` did.
const databaseURLFile = "database-url"

// RecordDatabaseURL writes url to the data dir for the tools; only its
// owner may read it, as it may carry a password.
func RecordDatabaseURL(dataDir, url string) error {
	if err := os.WriteFile(filepath.Join(dataDir, databaseURLFile), []byte(url+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the database URL in the data dir: %w", err)
	}
	return nil
}

// UseRecordedDatabaseURL fills an empty DatabaseURL from the data dir,
// where `serve` recorded it. A data dir without one leaves it empty, for
// Validate to explain.
func (c *Config) UseRecordedDatabaseURL() error {
	if c.DatabaseURL != "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.DataDir, databaseURLFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the recorded database URL: %w", err)
	}
	c.DatabaseURL = strings.TrimSpace(string(b))
	return nil
}
