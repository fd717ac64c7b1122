// Package s3gw runs an S3-compatible server on a local directory, for
// development (`make run`) and tests: versitygw's embeddable gateway with its
// posix backend. It speaks real S3 over HTTP, so trainyard reaches it through
// the AWS SDK exactly as it would reach AWS or MinIO.
//
// Two constraints of versitygw shape this package:
//   - one gateway per process: embedgw keeps package-level state, so Start
//     refuses a second gateway while one runs;
//   - the posix backend changes the process's working directory to its
//     root (it resolves bucket paths relative to it), so after Start,
//     relative paths in the same process point into the gateway's data.
//     Resolve paths before starting it, or run the gateway in a child
//     process with StartProcess, which leaves the caller's directory alone.
package s3gw

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/versity/versitygw/auth"
	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
)

// Config describes a gateway. Dir holds its data (objects under
// Dir/objects); Addr is the listen address, with port 0 meaning any free
// port; the key pair is the one account that may use it.
type Config struct {
	Dir             string
	Addr            string
	AccessKeyID     string
	SecretAccessKey string
	Region          string
	// Verbose lets the gateway print its banner and per-request lines.
	Verbose bool
}

// Server is a running gateway.
type Server struct {
	endpoint string
	cancel   context.CancelFunc
	done     chan error // in-process: receives the gateway's result, then is closed
	stop     func(ctx context.Context) error
}

// running guards the one-gateway-per-process rule before posix.New changes
// the working directory, which embedgw's own guard would come too late for.
var running atomic.Bool

// startTimeout bounds how long Start waits for the gateway to accept
// connections.
const startTimeout = 15 * time.Second

// Start runs a gateway in this process and returns once it accepts
// connections. ctx bounds the start only; the gateway runs until Close. It
// changes the working directory to Dir/objects (see the package comment).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if !running.CompareAndSwap(false, true) {
		return nil, errors.New("s3gw: a gateway already runs in this process (versitygw supports one per process); reuse it or use StartProcess")
	}
	srv, err := start(ctx, cfg)
	if err != nil {
		running.Store(false)
		return nil, err
	}
	return srv, nil
}

func start(ctx context.Context, cfg Config) (*Server, error) {
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("s3gw: data directory: %w", err)
	}
	root := filepath.Join(dir, "objects")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("s3gw: create data directory: %w", err)
	}
	// Object metadata (ETag, content type) goes into extended attributes
	// where the file system has them, else into a sidecar directory.
	var store meta.MetadataStorer = meta.XattrMeta{}
	// The library leaves CopyObject's size limit at zero when used as a
	// package (its command sets S3's 5 GiB), which refuses every copy; a
	// fork copies its source checkpoint server-side.
	opts := posix.PosixOpts{CopyObjectThreshold: 5 << 30}
	if (meta.XattrMeta{}).Test(root) != nil {
		side := filepath.Join(dir, "meta")
		if err := os.MkdirAll(side, 0o755); err != nil {
			return nil, fmt.Errorf("s3gw: create metadata directory: %w", err)
		}
		sc, err := meta.NewSideCar(side)
		if err != nil {
			return nil, fmt.Errorf("s3gw: metadata directory: %w", err)
		}
		store, opts.SideCarDir = sc, side
	}
	addr, err := resolveAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	be, err := posix.New(root, store, opts)
	if err != nil {
		return nil, fmt.Errorf("s3gw: open posix backend: %w", err)
	}
	rootAcct := auth.Account{Access: cfg.AccessKeyID, Secret: cfg.SecretAccessKey, Role: auth.RoleAdmin}
	gwCfg := &embedgw.Config{
		RootUserAccess:    cfg.AccessKeyID,
		RootUserSecret:    cfg.SecretAccessKey,
		Region:            cfg.Region,
		Ports:             []string{addr},
		MaxConnections:    1024,
		MaxRequests:       1024,
		MultipartMaxParts: 10000,
		Quiet:             !cfg.Verbose,
		// Given explicitly so auth.New does not announce single-account
		// mode on stdout.
		IAMService: auth.NewIAMServiceSingle(rootAcct),
	}
	gwCtx, cancel := context.WithCancel(context.Background())
	srv := &Server{endpoint: "http://" + addr, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := embedgw.RunVersityGW(gwCtx, be, gwCfg)
		running.Store(false)
		srv.done <- err
		close(srv.done)
	}()
	srv.stop = srv.stopInProcess
	if err := waitReady(ctx, addr, srv.done); err != nil {
		cancel()
		<-srv.done
		return nil, err
	}
	return srv, nil
}

// Endpoint returns the gateway's base URL, e.g. http://127.0.0.1:7070.
func (s *Server) Endpoint() string { return s.endpoint }

// Close stops the gateway and waits for it, at most until ctx ends. The
// data directory is kept.
func (s *Server) Close(ctx context.Context) error { return s.stop(ctx) }

func (s *Server) stopInProcess(ctx context.Context) error {
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok && err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("s3gw: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("s3gw: stop: %w", ctx.Err())
	}
}

func (c Config) check() error {
	switch {
	case c.Dir == "":
		return errors.New("s3gw: Config.Dir is required")
	case c.AccessKeyID == "" || c.SecretAccessKey == "":
		return errors.New("s3gw: an access key id and secret are required")
	}
	return nil
}

// resolveAddr turns a port-0 (or empty) address into a free loopback port.
// embedgw binds by address string and does not report the port it got, so
// the port is chosen here; the short window in which another process could
// take it only matters on a busy machine, where a retry helps.
func resolveAddr(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("s3gw: listen address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port != "0" {
		return net.JoinHostPort(host, port), nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("s3gw: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitReady polls addr until it accepts a connection, the gateway exits
// (done), ctx ends or startTimeout passes.
func waitReady(ctx context.Context, addr string, done <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("s3gw: gateway exited while starting: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("s3gw: %s did not come up: %w", addr, ctx.Err())
		case <-tick.C:
		}
	}
}
