package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/internal/telemetry"
	"github.com/trainyard/trainyard/storage/postgres"
	"github.com/trainyard/trainyard/storage/s3"
	"github.com/trainyard/trainyard/worker"
)

// connectTimeout bounds each connection attempt at start-up, so a wrong
// address fails the command instead of hanging it.
const connectTimeout = 30 * time.Second

// infra is what every long-running command connects to: PostgreSQL, the
// blob store and Temporal.
type infra struct {
	db       *postgres.DB
	blobs    *s3.Store
	temporal client.Client
}

// connectInfra opens what cfg points at: PostgreSQL (migrated), the
// S3-compatible store at cfg.S3.Endpoint and Temporal at
// cfg.Temporal.Address. On an error nothing stays open.
func connectInfra(ctx context.Context, cfg config.Config, log *zap.Logger) (*infra, error) {
	inf, err := connectStorage(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if inf.temporal, err = dialTemporal(ctx, cfg.Temporal.Address, cfg.Temporal.Namespace, log); err != nil {
		inf.close()
		return nil, err
	}
	return inf, nil
}

// connectStorage opens PostgreSQL (migrated) and the S3-compatible store,
// without Temporal (`trainyard infer`). On an error nothing stays open.
func connectStorage(ctx context.Context, cfg config.Config) (*infra, error) {
	inf := &infra{}
	var err error
	if inf.db, err = openDatabase(ctx, cfg.DatabaseURL, cfg.DBTimeout); err != nil {
		return nil, err
	}
	if inf.blobs, err = openBlobs(ctx, cfg.S3); err != nil {
		inf.close()
		return nil, err
	}
	return inf, nil
}

// openDatabase connects to PostgreSQL and migrates the schema (idempotent
// and safe when several processes start at once).
func openDatabase(ctx context.Context, url string, opTimeout time.Duration) (*postgres.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	db, err := postgres.OpenWith(ctx, url, postgres.Options{OpTimeout: opTimeout})
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate PostgreSQL: %w", err)
	}
	return db, nil
}

// openBlobs connects to the S3-compatible store at c.Endpoint (AWS itself
// when empty) and creates the bucket if it is missing.
func openBlobs(ctx context.Context, c config.S3) (*s3.Store, error) {
	endpoint := c.Endpoint
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	store, err := s3.New(ctx, s3.Config{
		Endpoint:        endpoint,
		Region:          c.Region,
		AccessKeyID:     c.AccessKeyID,
		SecretAccessKey: c.SecretAccessKey,
		Bucket:          c.Bucket,
		UsePathStyle:    endpoint != "" && c.UsePathStyle,
		ReadBuckets:     c.ReadBuckets,
	})
	if err != nil {
		return nil, fmt.Errorf("object storage: %w", err)
	}
	if err := store.EnsureBucket(ctx); err != nil {
		return nil, fmt.Errorf("object storage at %s: bucket %s: %w", endpointName(endpoint), c.Bucket, err)
	}
	return store, nil
}

func endpointName(endpoint string) string {
	if endpoint == "" {
		return "AWS"
	}
	return endpoint
}

// dialTemporal connects to the Temporal frontend at addr and checks that it
// answers, with the SDK's logs in the process log.
func dialTemporal(ctx context.Context, addr, namespace string, log *zap.Logger) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  addr,
		Namespace: namespace,
		// The SDK logs every poll retry at info; warn keeps outages visible
		// without drowning the request log.
		Logger: worker.NewLogger(atLeast(log.Named("temporal-sdk"), zap.WarnLevel)),
		// The SDK's own metrics (polls, task latencies, outcomes) join
		// trainyard's in the process's /metrics.
		MetricsHandler: telemetry.SDKHandler(),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", addr, namespace, err)
	}
	return c, nil
}

// close releases the connections; nil members are skipped.
func (i *infra) close() {
	if i.temporal != nil {
		i.temporal.Close()
	}
	if i.db != nil {
		i.db.Close()
	}
}
