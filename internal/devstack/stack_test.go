package devstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/trainyard/trainyard/internal/devstack"
)

const (
	taskQueue       = "devstack-test"
	searchAttribute = "TrainyardDevstackTest"
	// helperEnv makes the test binary act as the first process of the
	// restart test instead of running tests.
	helperEnv = "DEVSTACK_TEST_HELPER_DIR"
	// firstRunFile is where the helper reports its workflow ids.
	firstRunFile = "first-run.json"
)

// greet is a trivial workflow that completes at once.
func greet(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// waitForSignal stays open until it is signalled, so it must survive a
// restart of the server as a running workflow.
func waitForSignal(ctx workflow.Context) (string, error) {
	var s string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &s)
	return "got " + s, nil
}

// firstRun is what the helper process reports to the test.
type firstRun struct {
	GreetID, WaitID string
}

func startStack(dir string, logger *zap.Logger) (*devstack.Stack, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return devstack.Start(ctx, devstack.Config{
		DataDir:          dir,
		FrontendAddr:     "127.0.0.1:0",
		UIAddr:           "127.0.0.1:0",
		SearchAttributes: map[string]enumspb.IndexedValueType{searchAttribute: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
		Logger:           logger,
	})
}

func dial(s *devstack.Stack) (client.Client, error) {
	return client.Dial(client.Options{HostPort: s.FrontendAddr(), Namespace: s.Namespace()})
}

func newWorker(c client.Client) (worker.Worker, error) {
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
	w.RegisterWorkflowWithOptions(waitForSignal, workflow.RegisterOptions{Name: "waitForSignal"})
	return w, w.Start()
}

// TestMain lets the test binary double as the first process of
// TestStackPersistsAcrossRestart.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if err := runFirstProcess(dir); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runFirstProcess starts the stack, completes one workflow, leaves a second
// one waiting for a signal, prints their ids and stops the stack.
func runFirstProcess(dir string) error {
	s, err := startStack(dir, zap.NewNop())
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := dial(s)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := newWorker(c)
	if err != nil {
		return err
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-1", TaskQueue: taskQueue}, "greet", "yard")
	if err != nil {
		return err
	}
	var out string
	if err := run.Get(ctx, &out); err != nil {
		return err
	}
	if out != "hello yard" {
		return fmt.Errorf("greet returned %q", out)
	}
	wait, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "wait-1", TaskQueue: taskQueue}, "waitForSignal")
	if err != nil {
		return err
	}
	// A file, not stdout: the SDK's default logger writes to stdout.
	b, err := json.Marshal(firstRun{GreetID: run.GetID(), WaitID: wait.GetID()})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, firstRunFile), b, 0o600)
}

func TestStackPersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()

	// First life, in another process, so the second life reads everything
	// back from the SQLite file rather than from this process's memory.
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"="+dir)
	if out, err := helper.CombinedOutput(); err != nil {
		t.Fatalf("first process: %v\n%s", err, out)
	}
	out, err := os.ReadFile(filepath.Join(dir, firstRunFile))
	if err != nil {
		t.Fatal(err)
	}
	var first firstRun
	if err := json.Unmarshal(out, &first); err != nil {
		t.Fatalf("first process output %q: %v", out, err)
	}

	s, err := startStack(dir, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatalf("restart on the same data dir: %v", err)
	}
	defer s.Close()
	if _, err := os.Stat(s.DatabasePath()); err != nil {
		t.Fatalf("database file: %v", err)
	}
	c, err := dial(s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	desc, err := c.DescribeWorkflowExecution(ctx, first.GreetID, "")
	if err != nil {
		t.Fatalf("describe completed workflow after restart: %v", err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("greet status after restart = %s, want COMPLETED", got)
	}
	var greeting string
	if err := c.GetWorkflow(ctx, first.GreetID, "").Get(ctx, &greeting); err != nil || greeting != "hello yard" {
		t.Fatalf("greet result after restart = %q, %v", greeting, err)
	}
	desc, err = c.DescribeWorkflowExecution(ctx, first.WaitID, "")
	if err != nil {
		t.Fatalf("describe waiting workflow after restart: %v", err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("wait status after restart = %s, want RUNNING", got)
	}

	// The workflow started before the restart finishes on this server.
	w, err := newWorker(c)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := c.SignalWorkflow(ctx, first.WaitID, "", "go", "restart"); err != nil {
		t.Fatalf("signal: %v", err)
	}
	var waited string
	if err := c.GetWorkflow(ctx, first.WaitID, "").Get(ctx, &waited); err != nil || waited != "got restart" {
		t.Fatalf("wait result = %q, %v", waited, err)
	}

	sas, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.Namespace()})
	if err != nil {
		t.Fatalf("list search attributes: %v", err)
	}
	if got := sas.GetCustomAttributes()[searchAttribute]; got != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("search attribute %s = %s, want Keyword", searchAttribute, got)
	}

	checkUI(t, s.UIURL())
}

// checkUI fetches the UI's page and its settings API, which the UI server
// answers by calling the frontend.
func checkUI(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatalf("GET UI: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Fatalf("GET %s/ = %s, body %.200q", base, resp.Status, body)
	}
	resp, err = http.Get(base + "/api/v1/namespaces/default/workflows")
	if err != nil {
		t.Fatalf("GET UI workflows API: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "greet-1") {
		t.Fatalf("UI workflows API = %s, body %.300q", resp.Status, body)
	}
}

func TestStartRejectsBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = devstack.Start(context.Background(), devstack.Config{DataDir: t.TempDir(), FrontendAddr: l.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "cannot listen on "+l.Addr().String()) {
		t.Fatalf("Start on a busy port: err = %v, want a clear listen error", err)
	}
}

func TestStartValidatesConfig(t *testing.T) {
	for name, cfg := range map[string]devstack.Config{
		"no data dir":     {},
		"bad address":     {DataDir: t.TempDir(), FrontendAddr: "7233"},
		"short retention": {DataDir: t.TempDir(), Retention: time.Hour},
	} {
		if _, err := devstack.Start(context.Background(), cfg); err == nil {
			t.Errorf("%s: Start succeeded, want an error", name)
		}
	}
}
