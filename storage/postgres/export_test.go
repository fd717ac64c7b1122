package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// PoolOf exposes the pool to the package's external tests, which check rows
// that the store interfaces do not return (such as api_keys.last_used_at).
func PoolOf(db *DB) *pgxpool.Pool { return db.pool.Pool }
