package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trainyard/trainyard/storage/postgres"
)

// schemaPrefix starts the name of every schema this package creates.
const schemaPrefix = "pgtest_"

// leaseClass is the first key of the two-key advisory locks that lease
// schemas; the second is a hash of the schema name. Two-key locks never
// collide with tern's one-key migration lock.
const leaseClass = 0x7479 // "ty"

// admin creates, empties and drops test schemas. Its lease connection holds
// one advisory lock per schema this process owns, for the whole life of the
// process; the server releases them when the process dies.
type admin struct {
	base  string
	pool  *pgxpool.Pool
	mu    sync.Mutex // guards lease, a single session
	lease *pgx.Conn
}

var shared struct {
	once sync.Once
	a    *admin
	err  error
}

// adminOf connects once per process and sweeps the schemas of dead
// processes.
func adminOf(t testing.TB) *admin {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		shared.a, shared.err = connect(ctx, baseURL())
		if shared.err == nil {
			shared.a.sweep(ctx)
		}
	})
	if shared.err != nil {
		t.Fatalf("pgtest: %v", shared.err)
	}
	return shared.a
}

func connect(ctx context.Context, base string) (*admin, error) {
	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		return nil, fmt.Errorf("invalid %s: %w", EnvURL, err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	var lease *pgx.Conn
	if err == nil {
		lease, err = pgx.ConnectConfig(ctx, cfg.ConnConfig)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, fmt.Errorf("no PostgreSQL answers at %s (%v); run `make test`, which starts one, "+
			"or point %s at a server", redact(base), err, EnvURL)
	}
	return &admin{base: base, pool: pool, lease: lease}, nil
}

func leaseKey(schema string) int32 {
	h := fnv.New32a()
	h.Write([]byte(schema))
	return int32(h.Sum32())
}

// create makes a new empty schema leased to this process.
func (a *admin) create(ctx context.Context) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	schema := schemaPrefix + hex.EncodeToString(b[:])
	a.mu.Lock()
	_, err := a.lease.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, leaseClass, leaseKey(schema))
	a.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("lease schema: %w", err)
	}
	if _, err := a.pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	return schema, nil
}

// empty truncates every table of a schema but the migration version.
func (a *admin) empty(ctx context.Context, schema string) error {
	rows, err := a.pool.Query(ctx,
		`SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = $1 AND tablename <> $2`,
		schema, postgres.VersionTable)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		return err
	}
	for i, t := range tables {
		tables[i] = schema + "." + t
	}
	_, err = a.pool.Exec(ctx, "TRUNCATE "+strings.Join(tables, ", "))
	return err
}

// drop removes a schema and gives up its lease. Failures only leave a
// schema for a later sweep.
func (a *admin) drop(ctx context.Context, schema string) {
	_, _ = a.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.lease.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, leaseClass, leaseKey(schema))
}

// sweep drops the test schemas that no live process leases: those of test
// processes that were killed or simply exited with spare schemas.
func (a *admin) sweep(ctx context.Context) {
	rows, err := a.pool.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, schemaPrefix)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, n := range names {
		a.mu.Lock()
		var got bool
		err := a.lease.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, leaseClass, leaseKey(n)).Scan(&got)
		a.mu.Unlock()
		if err != nil || !got {
			continue // leased by a live process
		}
		a.drop(ctx, n)
	}
}
