package s3gw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// childEnv carries the child's configuration (JSON) from StartProcess to
// ServeIfChild.
const childEnv = "TRAINYARD_S3GW_CHILD"

// childConfig is what the parent tells its child.
type childConfig struct {
	Config
	RemoveDirOnExit bool `json:"remove_dir_on_exit"`
}

// ProcessOptions tune StartProcess.
type ProcessOptions struct {
	// RemoveDirOnExit makes the child delete Config.Dir when it stops (for
	// throwaway test data).
	RemoveDirOnExit bool
}

// ServeIfChild turns this process into a gateway when StartProcess started
// it, and never returns then; otherwise it returns at once. A program that
// uses StartProcess calls it first thing in main (or in an init function,
// as internal/testutil/s3test does for test binaries).
func ServeIfChild() {
	raw, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	os.Unsetenv(childEnv)
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "s3gw child: bad configuration: %v\n", err)
		os.Exit(2)
	}
	os.Exit(serveChild(cfg))
}

// childStopTimeout bounds a child's graceful stop. The gateway's own
// shutdown waits up to 10 s for open connections, which is pointless once the
// parent, the only client, is gone.
const childStopTimeout = 2 * time.Second

func serveChild(cfg childConfig) int {
	// The parent reads our stdout and stderr; once it is gone, a write
	// there (the gateway reports its shutdown on stderr) must fail with
	// EPIPE rather than kill us before the data directory is removed.
	signal.Ignore(syscall.SIGPIPE)
	if cfg.RemoveDirOnExit {
		defer os.RemoveAll(cfg.Dir)
	}
	// Stop on SIGTERM (the parent died: Pdeathsig) or SIGINT, or when
	// stdin reaches EOF (the parent closed it, or died). The signals stay
	// caught until exit, so a late SIGTERM cannot kill the child halfway
	// through its cleanup.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		cancel()
	}()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	// Not ctx: the parent sees the port open before our own readiness poll
	// does, and a parent that closes us right away (a short test) would
	// otherwise turn a clean stop into a failed start. Start is bounded by
	// startTimeout; a stop requested meanwhile is honoured just below.
	srv, err := Start(context.Background(), cfg.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {
	case <-ctx.Done():
	case err := <-srv.done:
		fmt.Fprintf(os.Stderr, "s3gw child: gateway stopped: %v\n", err)
		return 1
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), childStopTimeout)
	defer cancel()
	if err := srv.Close(closeCtx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// StartProcess runs a gateway in a child process (this program's own
// executable, which must call ServeIfChild early) and returns once it
// accepts connections. The caller's working directory is left alone, and
// the child stops when Close is called or when this process dies.
func StartProcess(ctx context.Context, cfg Config, opts ProcessOptions) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("s3gw: find own executable: %w", err)
	}
	var lastErr error
	for range 3 { // a free port picked here can be taken before the child binds it
		srv, err := startChild(ctx, exe, cfg, opts)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func startChild(ctx context.Context, exe string, cfg Config, opts ProcessOptions) (*Server, error) {
	addr, err := resolveAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	cfg.Addr = addr
	raw, err := json.Marshal(childConfig{Config: cfg, RemoveDirOnExit: opts.RemoveDirOnExit})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// The child's output goes to a buffer, never to this process's own
	// stdout/stderr: `go test` would wait for a child holding its pipes.
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("s3gw: start child: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- cmd.Wait()
		close(done)
	}()
	if err := waitReady(ctx, addr, done); err != nil {
		stdin.Close()
		_ = cmd.Process.Kill()
		<-done
		return nil, fmt.Errorf("%w; child output: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	srv := &Server{endpoint: "http://" + addr}
	srv.stop = func(ctx context.Context) error {
		stdin.Close() // EOF asks the child to stop
		select {
		case err, ok := <-done:
			if ok && err != nil {
				return fmt.Errorf("s3gw: child: %w; output: %s", err, bytes.TrimSpace(out.Bytes()))
			}
			return nil
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return fmt.Errorf("s3gw: stop child: %w", ctx.Err())
		}
	}
	return srv, nil
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a child's
// stdout and stderr copiers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil // keep the first 64 KiB; later output is noise
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
