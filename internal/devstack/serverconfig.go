package devstack

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	clusterName         = "active"
	storeName           = "default"
	visibilityStoreName = "visibility"
)

// serviceHosts are the gRPC addresses of the four Temporal services. Only
// the frontend's is chosen by the user; the others take free ports.
type serviceHosts struct {
	ip                                  string
	frontend, history, matching, worker int
	// frontendHTTP serves Temporal's HTTP API (and Nexus), on a free port.
	frontendHTTP int
}

func newServiceHosts(frontendAddr string) (serviceHosts, error) {
	ip, port := splitHostPort(frontendAddr)
	h := serviceHosts{ip: ip, frontend: port}
	for _, p := range []*int{&h.history, &h.matching, &h.worker, &h.frontendHTTP} {
		free, err := freePort(ip)
		if err != nil {
			return h, err
		}
		*p = free
	}
	return h, nil
}

func (h serviceHosts) addr(port int) string { return net.JoinHostPort(h.ip, strconv.Itoa(port)) }

func (h serviceHosts) static() map[primitives.ServiceName]static.Hosts {
	return map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: static.SingleLocalHost(h.addr(h.frontend)),
		primitives.HistoryService:  static.SingleLocalHost(h.addr(h.history)),
		primitives.MatchingService: static.SingleLocalHost(h.addr(h.matching)),
		primitives.WorkerService:   static.SingleLocalHost(h.addr(h.worker)),
	}
}

func (h serviceHosts) service(port int) config.Service {
	return config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: h.ip}}
}

// sqliteConfig is the persistence config for the database file at path.
// WAL keeps readers (the UI's visibility queries) off the writer's lock and
// survives a process crash with every committed transaction.
func sqliteConfig(path string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
			"busy_timeout": "10000",
		},
	}
}

// prepareDatabase creates the schema when the file is new and registers the
// namespace when it is missing; both are no-ops on an existing database.
func prepareDatabase(sqlCfg *config.SQL, namespace string, retention *durationpb.Duration) error {
	path := sqlCfg.DatabaseName
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := sqliteschema.SetupSchema(sqlCfg); err != nil {
			// A half-written schema would make every later start fail
			// with missing tables; remove it so the next start retries.
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(path + suffix)
			}
			return fmt.Errorf("create temporal schema in %s: %w", path, err)
		}
	} else if err != nil {
		return fmt.Errorf("stat temporal database: %w", err)
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return fmt.Errorf("namespace %s config: %w", namespace, err)
	}
	ns.Detail.Config.Retention = retention
	if err := sqliteschema.CreateNamespaces(sqlCfg, ns); err != nil {
		return fmt.Errorf("register namespace %s: %w", namespace, err)
	}
	return nil
}

// serverConfig is the static server configuration: one history shard, the
// default and visibility stores (one SQLite file for both, or two
// PostgreSQL databases), archival off, no metrics listener, static
// membership on loopback.
func serverConfig(store, visibility *config.SQL, h serviceHosts) *config.Config {
	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = h.ip
	c.Persistence.DefaultStore = storeName
	c.Persistence.VisibilityStore = storeName
	c.Persistence.NumHistoryShards = 1
	c.Persistence.DataStores = map[string]config.DataStore{storeName: {SQL: store}}
	if visibility != store {
		c.Persistence.VisibilityStore = visibilityStoreName
		c.Persistence.DataStores[visibilityStoreName] = config.DataStore{SQL: visibility}
	}
	c.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             h.addr(h.frontend),
				HTTPAddress:            h.addr(h.frontendHTTP),
			},
		},
	}
	c.DCRedirectionPolicy.Policy = "noop"
	frontend := h.service(h.frontend)
	frontend.RPC.HTTPPort = h.frontendHTTP
	c.Services = map[string]config.Service{
		string(primitives.FrontendService): frontend,
		string(primitives.HistoryService):  h.service(h.history),
		string(primitives.MatchingService): h.service(h.matching),
		string(primitives.WorkerService):   h.service(h.worker),
	}
	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	c.PublicClient.HostPort = h.addr(h.frontend)
	return &c
}
