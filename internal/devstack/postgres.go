package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
	"go.temporal.io/server/tools/common/schema"
	tempsql "go.temporal.io/server/tools/sql"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Postgres is where a Temporal server keeps its state in PostgreSQL, the
// production configuration: the default store in Database and visibility
// in Database + "_visibility", both created and migrated on start.
type Postgres struct {
	Addr, User, Password, Database string
}

// ParsePostgresURL reads postgres://user:password@host:port/database.
func ParsePostgresURL(raw string) (Postgres, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return Postgres{}, errors.New("want postgres://user:password@host:port/database")
	}
	pw, _ := u.User.Password()
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		return Postgres{}, errors.New("the URL names no database")
	}
	addr := u.Host
	if u.Port() == "" {
		addr += ":5432"
	}
	return Postgres{Addr: addr, User: u.User.Username(), Password: pw, Database: db}, nil
}

// visibilityDatabase names the visibility store's database.
func (p Postgres) visibilityDatabase() string { return p.Database + "_visibility" }

// sql is the persistence config of database db.
func (p Postgres) sql(db string) *config.SQL {
	return &config.SQL{
		PluginName: pgplugin.PluginNamePGX, DatabaseName: db, ConnectAddr: p.Addr, ConnectProtocol: "tcp",
		User: p.User, Password: p.Password, MaxConns: 20, MaxIdleConns: 20, MaxConnLifetime: time.Hour,
	}
}

// prepare creates both databases when missing and brings their schemas to
// this server's version: a new database gets the whole schema, an older one
// its versioned updates.
func (p Postgres) prepare(logger log.Logger) error {
	for _, s := range []struct{ db, name, version string }{
		{p.Database, "postgresql/v12/temporal", pgschema.Version},
		{p.visibilityDatabase(), "postgresql/v12/visibility", pgschema.VisibilityVersion},
	} {
		cfg := p.sql(s.db)
		create := *cfg // DoCreateDatabase points its config at the maintenance database
		if err := tempsql.DoCreateDatabase(&create, "postgres", logger); err != nil && !strings.Contains(err.Error(), "42P04") {
			return fmt.Errorf("create temporal database %s: %w", s.db, err) // 42P04: it exists already
		}
		conn, err := tempsql.NewConnection(cfg, logger)
		if err != nil {
			return fmt.Errorf("connect to temporal database %s: %w", s.db, err)
		}
		if _, verr := conn.ReadSchemaVersion(); verr != nil {
			err = schema.NewSetupSchemaTask(conn, &schema.SetupConfig{SchemaName: s.name, InitialVersion: s.version}, logger).Run()
		} else {
			err = schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: s.db, SchemaName: s.name}, logger).Run()
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("temporal schema %s in %s: %w", s.name, s.db, err)
		}
	}
	return nil
}

// registerNamespace registers namespace with retention unless it exists.
// (The SQLite store is seeded directly; a PostgreSQL one goes through the
// frontend, like any cluster's.)
func (ts *temporalServer) registerNamespace(ctx context.Context, namespace string, retention time.Duration) error {
	_, err := ts.client.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("devstack: register namespace %s: %w", namespace, err)
	}
	return nil
}
