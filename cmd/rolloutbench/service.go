package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// service is a `trainyard serve` child process, everything embedded, on free ports.
type service struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	exited         chan struct{}
	exitErr        error
	api, key       string // the banner's "API" and "API key"
}

// bannerField matches the lines of serve's banner that name its addresses and key.
var bannerField = regexp.MustCompile(`(?m)^  (API key|API) +(\S+)`)

// startService runs `binary serve` with its data in dataDir, the base models of modelsDir, PostgreSQL at
// databaseURL and GOMAXPROCS threads, and returns once its banner is out and /v1/system-check answers.
// extra are further VAR=value settings. Nothing of the caller's TRAINYARD_*, S3 or Temporal settings
// reaches it.
func startService(binary, dataDir, modelsDir, databaseURL string, threads int, extra []string) (*service, error) {
	env := append([]string{
		"DATABASE_URL=" + databaseURL,
		"TRAINYARD_DATA_DIR=" + dataDir,
		"TRAINYARD_MODELS_DIR=" + modelsDir,
		"TRAINYARD_HTTP_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_FRONTEND_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_UI_ADDR=127.0.0.1:0",
		"TRAINYARD_S3_ADDR=127.0.0.1:0",
		fmt.Sprintf("GOMAXPROCS=%d", threads),
	}, extra...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || name == "TEMPORAL_ADDRESS" || name == "GOMAXPROCS" ||
			strings.HasPrefix(name, "TRAINYARD_") || strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	s := &service{stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(binary, "serve")
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = env, s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", binary, err)
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

func (s *service) waitReady() error {
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(s.stdout.String(), "Press Ctrl+C") {
		select {
		case <-s.exited:
			return fmt.Errorf("trainyard serve exited before its banner (%v)\n%s", s.exitErr, s.stderr.tail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("trainyard serve: no banner after 3 minutes\n%s", s.stderr.tail())
		}
	}
	for _, m := range bannerField.FindAllStringSubmatch(s.stdout.String(), -1) {
		switch m[1] {
		case "API":
			s.api = m[2]
		case "API key":
			s.key = m[2]
		}
	}
	if s.api == "" || s.key == "" {
		return fmt.Errorf("trainyard serve: no API address or key in its banner:\n%s", s.stdout)
	}
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(s.api + "/v1/system-check")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("trainyard serve: system-check not healthy after a minute (%v)\n%s", err, s.stderr.tail())
		}
	}
}

// stop interrupts the service as Ctrl+C does and waits a minute for it to exit, then kills it; with logFile
// set, it writes the service's log there.
func (s *service) stop(logFile string) error {
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("interrupt trainyard serve: %w", err)
	}
	var err error
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.kill()
		err = errors.New("trainyard serve did not exit within a minute of SIGINT; killed")
	}
	if logFile != "" {
		s.stderr.mu.Lock()
		werr := os.WriteFile(logFile, s.stderr.buf.Bytes(), 0o644)
		s.stderr.mu.Unlock()
		err = errors.Join(err, werr)
	}
	return err
}

func (s *service) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// syncBuffer is a bytes.Buffer safe for the child's writes and our reads at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail is the last few kilobytes written, for error messages.
func (b *syncBuffer) tail() string {
	s := b.String()
	if len(s) > 4096 {
		s = "…" + s[len(s)-4096:]
	}
	return s
}
