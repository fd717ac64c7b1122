package examples_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
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

// goTool is the go command that runs this test.
func goTool(t *testing.T) string {
	t.Helper()
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build with: %v", err)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// build compiles the packages (paths relative to the module root) into dir
// with one `go build`, as a user would.
func build(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	cmd := exec.Command(goTool(t), append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = ".." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
	}
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// service is a `trainyard serve` child process.
type service struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	exited         chan struct{}
	exitErr        error
	// What the banner said.
	api, key, ui, temporal, s3 string
}

var bannerField = regexp.MustCompile(`(?m)^  (API key|API|Temporal UI|Temporal|S3) +(\S+)`)

// startService runs `trainyard serve` the way `make run` does, on free
// ports, a fresh data dir and a fresh schema of the test database, and
// waits until its banner is printed and /v1/system-check is healthy.
func startService(t *testing.T, binary string) *service {
	t.Helper()
	env := []string{
		"DATABASE_URL=" + pgtest.URL(t),
		"TRAINYARD_DATA_DIR=" + t.TempDir(),
		"TRAINYARD_HTTP_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_FRONTEND_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_UI_ADDR=127.0.0.1:0",
		"TRAINYARD_S3_ADDR=127.0.0.1:0",
	}
	// Nothing of the caller's configuration leaks in: every part is embedded.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || name == "TEMPORAL_ADDRESS" || strings.HasPrefix(name, "TRAINYARD_") ||
			strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	s := &service{stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(binary, "serve")
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = env, s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start trainyard serve: %v", err)
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	// Kill it if the test ends another way; stop() normally comes first.
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})

	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(s.stdout.String(), "Press Ctrl+C") {
		select {
		case <-s.exited:
			t.Fatalf("trainyard serve exited before its banner (%v)\nstdout:\n%s\nstderr:\n%s", s.exitErr, s.stdout, s.stderr)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner after 3 minutes\nstdout:\n%s\nstderr:\n%s", s.stdout, s.stderr)
		}
	}
	fields := map[string]string{}
	for _, m := range bannerField.FindAllStringSubmatch(s.stdout.String(), -1) {
		fields[m[1]] = m[2]
	}
	s.api, s.key, s.ui, s.temporal, s.s3 = fields["API"], fields["API key"], fields["Temporal UI"], fields["Temporal"], fields["S3"]
	if s.api == "" || s.key == "" || s.ui == "" || s.temporal == "" || s.s3 == "" {
		t.Fatalf("banner incomplete:\n%s", s.stdout)
	}
	// The worker's pollers register right after the banner.
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(s.api + "/v1/system-check")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("system-check not healthy after a minute (%v %v)\nstderr:\n%s", resp, err, s.stderr)
		}
	}
	return s
}

// stop interrupts the service as Ctrl+C does and checks that it exits
// cleanly (status 0) within a minute, with nothing left listening on the
// addresses it had: API, Temporal frontend and UI, S3 gateway (a child
// process).
func (s *service) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("interrupt trainyard serve: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Fatalf("trainyard serve still running a minute after the interrupt\nstderr:\n%s", s.stderr)
	}
	if s.exitErr != nil {
		t.Errorf("trainyard serve exited with %v after the interrupt\nstderr:\n%s", s.exitErr, s.stderr)
	}
	for _, field := range []string{s.api, s.ui, s.s3, "tcp://" + s.temporal} {
		u, err := url.Parse(field)
		if err != nil {
			t.Errorf("address %q: %v", field, err)
			continue
		}
		if stillListening(u.Host) {
			t.Errorf("%s still accepts connections after trainyard serve exited", u.Host)
		}
	}
	for _, bad := range []string{"panic:", "DATA RACE", "\tERROR\t", "FATAL"} {
		if strings.Contains(s.stderr.String(), bad) {
			t.Errorf("the service's log contains %q:\n%s", bad, s.stderr)
		}
	}
}

// stillListening reports whether something accepts connections at addr,
// retrying for a few seconds while a child process is on its way out.
func stillListening(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		select {
		case <-ctx.Done():
			return true
		case <-time.After(200 * time.Millisecond):
		}
	}
}
