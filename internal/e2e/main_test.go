package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/devstack"
	"github.com/trainyard/trainyard/workflows"
)

// TestMain runs the worker process when the test binary is re-executed as
// one (see workerProcess), and otherwise the tests, stopping the shared
// Temporal server at the end.
func TestMain(m *testing.M) {
	if os.Getenv(envRole) == roleWorker {
		os.Exit(runWorkerProcess())
	}
	code := m.Run()
	if temporal.stack != nil {
		temporal.stack.Close()
		os.RemoveAll(temporal.dir)
	}
	os.Exit(code)
}

// temporal is the Temporal server shared by every test of the process; tests
// keep apart by task queue and workflow id.
var temporal struct {
	once  sync.Once
	stack *devstack.Stack
	dir   string
	err   error
}

// temporalServer starts the shared server on first use.
func temporalServer(t testing.TB) *devstack.Stack {
	t.Helper()
	temporal.once.Do(func() {
		temporal.dir, temporal.err = os.MkdirTemp("", "trainyard-e2e-temporal-*")
		if temporal.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		temporal.stack, temporal.err = devstack.Start(ctx, devstack.Config{
			DataDir: temporal.dir, FrontendAddr: "127.0.0.1:0", DisableUI: true,
			SearchAttributes: workflows.SearchAttributeTypes(),
		})
	})
	if temporal.err != nil {
		t.Fatalf("start the Temporal server: %v", temporal.err)
	}
	return temporal.stack
}

// queues counts the task queues handed out, so tests running in parallel
// never share one.
var queues atomic.Int64

// taskQueue returns a task queue no other test uses (nor an earlier run
// against the same server).
func taskQueue() string {
	return fmt.Sprintf("e2e-%d-%d", time.Now().UnixNano(), queues.Add(1))
}
