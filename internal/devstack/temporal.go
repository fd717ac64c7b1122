package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/types/known/durationpb"
)

// readyTimeout bounds the wait for the frontend when ctx has no deadline.
const readyTimeout = 90 * time.Second

// temporalServer is a started Temporal server plus the SDK client devstack
// uses to check readiness and manage search attributes.
type temporalServer struct {
	server temporal.Server
	client client.Client
	// level gates the server's logs; close raises it to error, because
	// a stopping server warns about every connection its own services drop.
	level zap.AtomicLevel
	// stopping, set by close, drops the errors that are only the
	// cancellation Stop causes (see shutdownCore).
	stopping *atomic.Bool
}

// startTemporal prepares the SQLite file, starts all four Temporal services
// in this process and waits until the namespace answers.
func startTemporal(ctx context.Context, cfg Config) (*temporalServer, error) {
	hosts, err := newServiceHosts(cfg.FrontendAddr)
	if err != nil {
		return nil, fmt.Errorf("devstack: %w", err)
	}
	zl, level, stopping := gatedLogger(cfg.Logger.Named("temporal"))
	logger := log.NewZapLogger(zl)
	var store, visibility *config.SQL
	if pg := cfg.Postgres; pg != nil {
		if err := pg.prepare(logger); err != nil {
			return nil, fmt.Errorf("devstack: %w", err)
		}
		store, visibility = pg.sql(pg.Database), pg.sql(pg.visibilityDatabase())
	} else {
		store = sqliteConfig(databasePath(cfg.DataDir))
		if err := prepareDatabase(store, cfg.Namespace, durationpb.New(cfg.Retention)); err != nil {
			return nil, fmt.Errorf("devstack: %w", err)
		}
		visibility = store
	}
	conf := serverConfig(store, visibility, hosts)

	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("devstack: temporal authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("devstack: temporal claim mapper: %w", err)
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		// Static membership skips ringpop gossip: one process, known ports.
		temporal.WithStaticHosts(hosts.static()),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("devstack: build temporal server: %w", err)
	}
	// Until the frontend reports healthy, the server's own services and
	// waitReady's probes get "Frontend is not healthy yet", which the server
	// logs as errors. What matters of that window is whether it ends, which
	// waitReady reports with its last error; the logs resume after it.
	steady := level.Level()
	level.SetLevel(zap.FatalLevel)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devstack: start temporal server: %w", err)
	}
	ts := &temporalServer{server: srv, level: level, stopping: stopping}
	register := cfg.Postgres != nil // SQLite's namespace was seeded in the file
	if err := ts.waitReady(ctx, cfg.FrontendAddr, cfg.Namespace, register, cfg.Retention); err != nil {
		_ = ts.close()
		return nil, err
	}
	level.SetLevel(steady)
	return ts, nil
}

// dynamicConfig tunes the server for one developer on one machine.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// New search attributes are usable at once instead of after the
		// cache's refresh interval.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		// The Web UI lists and counts workflows often; the default per-
		// instance visibility limit is sized for a cluster.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8192,
		// A namespace registered through the frontend (PostgreSQL
		// stores) is usable once every service's namespace cache has
		// refreshed; 10 s by default.
		dynamicconfig.NamespaceCacheRefreshInterval.Key(): time.Second,
	}
}

// waitReady dials the frontend and polls until it reports healthy and the
// namespace can be described: the frontend's gRPC port opens before the
// namespace registry has loaded, and callers should not see that window.
func (ts *temporalServer) waitReady(ctx context.Context, addr, namespace string, register bool, retention time.Duration) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  addr,
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return fmt.Errorf("devstack: dial temporal frontend %s: %w", addr, err)
	}
	ts.client = c
	var last error
	for {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		if err == nil {
			_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		}
		var missing *serviceerror.NamespaceNotFound
		if register && errors.As(err, &missing) {
			err = ts.registerNamespace(ctx, namespace, retention)
		}
		if err == nil {
			// Describe reads the store; workflow calls read the
			// services' namespace caches, which learn of a newly
			// registered namespace a moment later.
			_, err = c.WorkflowService().ListOpenWorkflowExecutions(ctx,
				&workflowservice.ListOpenWorkflowExecutionsRequest{Namespace: namespace, MaximumPageSize: 1})
		}
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("devstack: temporal not ready: %w", errors.Join(ctx.Err(), last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ensureSearchAttributes adds the custom search attributes that the
// namespace lacks. Types of existing attributes are not changed: Temporal
// cannot retype an attribute, and a mismatch is reported instead.
func (ts *temporalServer) ensureSearchAttributes(ctx context.Context, namespace string, want map[string]enumspb.IndexedValueType) error {
	if len(want) == 0 {
		return nil
	}
	op := ts.client.OperatorService()
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("devstack: list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range want {
		got, ok := have.GetCustomAttributes()[name]
		if !ok {
			missing[name] = typ
			continue
		}
		if got != typ {
			return fmt.Errorf("devstack: search attribute %s is %s in namespace %s, want %s", name, got, namespace, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("devstack: add search attributes: %w", err)
	}
	return nil
}

func (ts *temporalServer) close() error {
	ts.level.SetLevel(zap.ErrorLevel)
	ts.stopping.Store(true)
	if ts.client != nil {
		ts.client.Close()
	}
	if err := ts.server.Stop(); err != nil {
		return fmt.Errorf("devstack: stop temporal server: %w", err)
	}
	return nil
}

// gatedLogger returns l behind a level that starts at warn (or l's own
// level, if higher) and can be raised later: the server logs routine
// membership, shard and queue chatter at info, which would drown
// trainyard's own logs. Once the returned flag is set (the server is
// stopping), entries whose error is a context's cancellation are dropped.
// The errors in demotedErrors are logged as warnings.
func gatedLogger(l *zap.Logger) (*zap.Logger, zap.AtomicLevel, *atomic.Bool) {
	level := zap.NewAtomicLevelAt(max(zap.WarnLevel, l.Level()))
	stopping := new(atomic.Bool)
	gated := l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		// Cannot fail: level never enables what c's own level rejects.
		core, _ := zapcore.NewIncreaseLevelCore(c, level)
		return shutdownCore{Core: core, stopping: stopping}
	}))
	return gated, level, stopping
}

// shutdownCore drops, once stopping is set, the entries that carry an error
// caused by a context's cancellation: Stop cancels its services' loops, and
// some log that as an error — the frontend's namespace registry logged
// "Error refreshing namespace cache: context canceled" a second after
// trainyard serve began shutting down, and failed a test that holds the
// service's log to no errors. Any other error still passes.
type shutdownCore struct {
	zapcore.Core
	stopping *atomic.Bool
}

func (c shutdownCore) With(fields []zapcore.Field) zapcore.Core {
	return shutdownCore{Core: c.Core.With(fields), stopping: c.stopping}
}

// demotedErrors are messages the server logs at error level for what is no
// fault of the service. "unable to add metrics baggage to gRPC trailer": its
// metrics interceptor sets a trailer after the handler returns, and when the
// caller has already gone (a long poll the SDK cancelled) gRPC refuses it with
// "transport: SendHeader called multiple times"; only that call's cross-service
// metric counters are lost. It appeared mid-run in a test that holds the
// service's log to no errors (examples' TestExamples) and failed it.
var demotedErrors = map[string]bool{
	"unable to add metrics baggage to gRPC trailer": true,
}

func (c shutdownCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Level == zapcore.ErrorLevel && demotedErrors[e.Message] {
		e.Level = zapcore.WarnLevel
	}
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c shutdownCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if c.stopping.Load() {
		for _, f := range fields {
			if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType && errors.Is(err, context.Canceled) {
				return nil
			}
		}
	}
	return c.Core.Write(e, fields)
}
