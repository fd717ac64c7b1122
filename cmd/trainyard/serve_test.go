package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/trainyard/trainyard/internal/s3gw"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

// TestMain lets the test binary serve as the embedded S3 gateway's child
// process, as the trainyard binary does.
func TestMain(m *testing.M) {
	s3gw.ServeIfChild()
	if args, ok := os.LookupEnv(envRunMain); ok {
		os.Unsetenv(envRunMain)
		os.Args = append([]string{"trainyard"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lockedBuffer is a bytes.Buffer that serve writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p under the lock.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is what the banner of one `serve` run said.
type served struct {
	api, key, ui, temporal string
	stop                   func() error
}

var bannerLine = regexp.MustCompile(`(?m)^  (API key|API|Temporal UI|Temporal) +(\S+)`)

// startServe runs `trainyard serve` in this process with the environment
// already set, waits for its banner and returns what it printed.
func startServe(t *testing.T) served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, out, io.Discard) }()
	deadline := time.After(3 * time.Minute)
	for !strings.Contains(out.String(), "Press Ctrl+C") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve exited before its banner: %v\n%s", err, out)
		case <-deadline:
			cancel()
			t.Fatalf("no banner after 3 minutes:\n%s", out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	fields := map[string]string{}
	for _, m := range bannerLine.FindAllStringSubmatch(out.String(), -1) {
		fields[m[1]] = m[2]
	}
	s := served{api: fields["API"], key: fields["API key"], ui: fields["Temporal UI"], temporal: fields["Temporal"]}
	var once sync.Once
	var stopErr error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(time.Minute):
				stopErr = errors.New("serve did not stop within a minute")
			}
		})
		return stopErr
	}
	// Stop before pgtest drops the schema, also when the test fails.
	t.Cleanup(func() { _ = s.stop() })
	return s
}

func call(t testing.TB, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// TestServe runs `serve` twice on one data dir: everything comes up and is
// healthy, the default key works, and the second run prints the same key and
// still has the first run's model.
func TestServe(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.URL(t))
	checkout := t.TempDir() // stands for the repository, with serve's data in .data as make run has it
	t.Setenv("TRAINYARD_DATA_DIR", filepath.Join(checkout, ".data"))
	t.Setenv("TRAINYARD_HTTP_ADDR", "127.0.0.1:0") // each run prints the address it listens on
	t.Setenv("TRAINYARD_TEMPORAL_FRONTEND_ADDR", "127.0.0.1:0")
	t.Setenv("TRAINYARD_TEMPORAL_UI_ADDR", "127.0.0.1:0")
	for _, name := range []string{"TRAINYARD_DEV_API_KEY", "TEMPORAL_ADDRESS", "S3_ENDPOINT", "TRAINYARD_S3_ENDPOINT",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(name, "")
	}

	s := startServe(t)
	if s.api == "" || s.key == "" || s.ui == "" || s.temporal == "" {
		t.Fatalf("banner incomplete: %+v", s)
	}
	if code, _ := call(t, "GET", s.api+"/v1/preview/models/00000000-0000-0000-0000-000000000000/checkpoints", "", ""); code != 401 {
		t.Fatalf("no key: status %d, want 401", code)
	}
	// Pollers register right after the worker starts; give them a moment.
	var body map[string]any
	for start := time.Now(); ; {
		var code int
		code, body = call(t, "GET", s.api+"/v1/system-check", "", "")
		if code == 200 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("system-check = %d %v", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, check := range []string{"database", "storage", "temporal", "queue:trainyard-training", "queue:trainyard-training-compute", "queue:trainyard-training-fetch"} {
		if r, ok := body[check].(map[string]any); !ok || r["success"] != true {
			t.Errorf("system-check %s = %v", check, body[check])
		}
	}
	code, model := call(t, "POST", s.api+"/v1/preview/models", s.key,
		`{"project":"p","name":"m","base_model":"trainyard/tiny-chat","return_existing":true}`)
	if code != 200 || model["entity"] != "local" {
		t.Fatalf("create model = %d %v", code, model)
	}
	readmeKeysCommand(t, s)
	readmeCurlSession(t, s, checkout)
	resp, err := http.Get(s.ui + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Temporal UI: %v %v", resp, err)
	}
	resp.Body.Close()
	checkTemporalProbes(t, s.temporal)
	if err := s.stop(); err != nil {
		t.Fatalf("first run: %v", err)
	}

	again := startServe(t)
	defer func() {
		if err := again.stop(); err != nil {
			t.Errorf("second run: %v", err)
		}
	}()
	if again.key != s.key {
		t.Fatalf("restart printed key %s, want %s", again.key, s.key)
	}
	code, same := call(t, "POST", again.api+"/v1/preview/models", again.key,
		`{"project":"p","name":"m","base_model":"trainyard/tiny-chat","return_existing":true}`)
	if code != 200 || same["id"] != model["id"] {
		t.Fatalf("after restart the model is %d %v, want id %v", code, same, model["id"])
	}
}

// checkTemporalProbes runs the system-check probes directly against the
// embedded server: healthy frontend, pollers on the job queue, none on a
// queue nobody serves.
func checkTemporalProbes(t *testing.T, addr string) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := temporalHealth(c)(ctx); err != nil {
		t.Errorf("temporal probe: %v", err)
	}
	if err := pollersPresent(c, "trainyard-training", enumspb.TASK_QUEUE_TYPE_WORKFLOW)(ctx); err != nil {
		t.Errorf("pollers on the job queue: %v", err)
	}
	if err := pollersPresent(c, "nobody-polls-this", enumspb.TASK_QUEUE_TYPE_WORKFLOW)(ctx); !errors.Is(err, errNoPollers) {
		t.Errorf("pollers on an unserved queue: err = %v, want errNoPollers", err)
	}
}

// readmeKeysCommand runs the README's `bin/trainyard keys create` command,
// word for word, in the state `make run` leaves: no DATABASE_URL, the
// checkout's data dir (here the test's, which the README's default .data
// stands for). The key it prints must work against the running server.
func readmeKeysCommand(t *testing.T, s served) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`bin/trainyard (keys create [^`]+)`").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README shows no `bin/trainyard keys create ...` command")
	}
	defer t.Setenv("DATABASE_URL", os.Getenv("DATABASE_URL"))
	t.Setenv("DATABASE_URL", "")
	var out bytes.Buffer
	if err := run(context.Background(), strings.Fields(string(m[1])), &out, io.Discard); err != nil {
		t.Fatalf("README command %q: %v", m[0], err)
	}
	key := strings.TrimSpace(out.String())
	code, model := call(t, "POST", s.api+"/v1/preview/models", key, `{"project":"p","name":"from-readme","base_model":"trainyard/tiny-chat"}`)
	if code != 200 || model["entity"] != "my-team" {
		t.Fatalf("the README's key: create model = %d %v", code, model)
	}
}

// readmeCurlSession runs the README's "first session with curl", word for
// word, with bash in the checkout (whose .data holds serve's key), pointed at
// the server by TRAINYARD_BASE_URL: it creates a model, logs a group,
// trains one RL step, reads the job, its events and checkpoints and deletes
// the model.
func readmeCurlSession(t *testing.T, s served, checkout string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)### A first session with curl\n.*?```bash\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no bash block under \"A first session with curl\"")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", string(m[1]))
	cmd.Dir = checkout
	cmd.Env = append(os.Environ(), "TRAINYARD_BASE_URL="+s.api+"/v1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's curl session: %v\n%s", err, out)
	}
	for _, want := range []string{`"api":true`, `"name":"agent-001"`, `"val/reward":0.5`, `"status":"COMPLETED"`,
		`"type":"training_ended"`, `"step":1`, `"deleted_checkpoints":1`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's curl session printed no %s:\n%s", want, out)
		}
	}
}
