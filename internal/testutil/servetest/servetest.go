// Package servetest builds the trainyard binary and runs `trainyard serve`
// as `make run` does (embedded Temporal, Web UI and S3, a fresh schema of
// the test database, free ports, a temporary data dir), for tests that use
// the whole service from outside: browsers, load.
package servetest

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

// Build compiles ./cmd/trainyard into a temporary directory with `go
// build`, as a user would, and returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	return BuildPackage(t, "./cmd/trainyard")
}

// BuildPackage compiles the main package pkg (a path relative to the module
// root, such as ./examples/rl-toy) and returns the binary's path.
func BuildPackage(t testing.TB, pkg string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("servetest: %v", err)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command(goTool(), "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("servetest: go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Service is a running `trainyard serve` and what its banner said.
type Service struct {
	// API is the API's base URL (http://127.0.0.1:port); Key the default
	// account's key; UI the Temporal Web UI's URL; DatabaseURL the schema
	// the service uses, for tests that seed it directly.
	API, Key, UI, DatabaseURL string
	cmd                       *exec.Cmd
	stdout, stderr            *buffer
	exited                    chan struct{}
	exitErr                   error
}

var bannerField = regexp.MustCompile(`(?m)^  (API key|API|Temporal UI) +(\S+)`)

// Start runs binary serve with nothing of the caller's configuration but
// env (NAME=value entries), waits for its banner and a healthy
// system-check, and stops it when the test ends.
func Start(t testing.TB, binary string, env ...string) *Service {
	t.Helper()
	s := &Service{DatabaseURL: pgtest.URL(t), stdout: &buffer{}, stderr: &buffer{}, exited: make(chan struct{})}
	base := []string{
		"DATABASE_URL=" + s.DatabaseURL,
		"TRAINYARD_DATA_DIR=" + t.TempDir(),
		"TRAINYARD_HTTP_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_FRONTEND_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_UI_ADDR=127.0.0.1:0",
		"TRAINYARD_S3_ADDR=127.0.0.1:0",
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || name == "TEMPORAL_ADDRESS" || strings.HasPrefix(name, "TRAINYARD_") ||
			strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") {
			continue
		}
		base = append(base, kv)
	}
	s.cmd = exec.Command(binary, "serve")
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = append(base, env...), s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("servetest: start trainyard serve: %v", err)
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop() })

	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(s.stdout.String(), "Press Ctrl+C") {
		select {
		case <-s.exited:
			t.Fatalf("servetest: trainyard serve exited before its banner (%v)\nstdout:\n%s\nstderr:\n%s", s.exitErr, s.stdout, s.stderr)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("servetest: no banner after 3 minutes\nstdout:\n%s\nstderr:\n%s", s.stdout, s.stderr)
		}
	}
	fields := map[string]string{}
	for _, m := range bannerField.FindAllStringSubmatch(s.stdout.String(), -1) {
		fields[m[1]] = m[2]
	}
	s.API, s.Key, s.UI = fields["API"], fields["API key"], fields["Temporal UI"]
	if s.API == "" || s.Key == "" {
		t.Fatalf("servetest: banner incomplete:\n%s", s.stdout)
	}
	// The worker's pollers register right after the banner.
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(s.API + "/v1/system-check")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("servetest: system-check not healthy after a minute (%v)\nstderr:\n%s", err, s.stderr)
		}
	}
	return s
}

// Banner is what the service printed on stdout.
func (s *Service) Banner() string { return s.stdout.String() }

// Log is what the service wrote on stderr so far.
func (s *Service) Log() string { return s.stderr.String() }

// CheckLog fails the test when the service logged an error, a panic or a
// race: what the test did must not have hurt it.
func (s *Service) CheckLog(t testing.TB) {
	t.Helper()
	for _, bad := range []string{"panic:", "DATA RACE", "\tERROR\t", "FATAL"} {
		if strings.Contains(s.stderr.String(), bad) {
			t.Errorf("the service's log contains %q:\n%s", bad, s.stderr)
		}
	}
}

// stop interrupts the service as Ctrl+C does and waits for it, killing it
// after a minute.
func (s *Service) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// moduleRoot is the directory of the go.mod of the test's working
// directory.
func moduleRoot() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// goTool is the go command of the toolchain running the test.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// buffer collects a child's output while the test reads it.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
