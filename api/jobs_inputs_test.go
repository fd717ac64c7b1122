package api_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
)

// inputLedger is a blob store that notes which jobs got an input stored
// and which had their files deleted.
type inputLedger struct {
	trainyard.BlobStore
	mu           sync.Mutex
	put, deleted map[string]bool
}

func (l *inputLedger) PutJobInput(ctx context.Context, jobID, name string, r io.Reader, size int64) error {
	l.mu.Lock()
	l.put[jobID] = true
	l.mu.Unlock()
	return l.BlobStore.PutJobInput(ctx, jobID, name, r, size)
}

func (l *inputLedger) DeleteJobFiles(ctx context.Context, jobID string) error {
	l.mu.Lock()
	l.deleted[jobID] = true
	l.mu.Unlock()
	return l.BlobStore.DeleteJobFiles(ctx, jobID)
}

// kept lists the jobs whose stored input was not deleted.
func (l *inputLedger) kept() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for id := range l.put {
		if !l.deleted[id] {
			out = append(out, id)
		}
	}
	return out
}

// TestRepeatedSubmissionsLeaveNoInputs: the input of a request is stored
// before its job row exists; when the row turns out to exist already (a
// repeated Idempotency-Key, the same body or another) or cannot be created,
// that input belongs to no job and is deleted, so retries do not pile up
// orphans in the bucket that no job's end or model deletion removes.
func TestRepeatedSubmissionsLeaveNoInputs(t *testing.T) {
	t.Parallel()
	var ledger *inputLedger
	e, _ := newJobsEnv(t, func(_ *api.Config, d *api.Deps) {
		ledger = &inputLedger{BlobStore: d.Blobs, put: map[string]bool{}, deleted: map[string]bool{}}
		d.Blobs = ledger
	})
	model := e.createModel("orphans")
	key := header("Idempotency-Key", "once")
	first := e.call("POST", "/v1/preview/training-jobs", rlBody(model, `{"learning_rate": 1e-4}`), key)
	mustStatus(t, first, http.StatusOK)
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", rlBody(model, `{"learning_rate": 1e-4}`), key), http.StatusOK)
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", rlBody(model, `{"learning_rate": 2e-4}`), key), http.StatusConflict)
	if kept := ledger.kept(); len(kept) != 1 || kept[0] != first.JSON(t)["id"] {
		t.Fatalf("stored inputs kept for %v, want only job %v's", kept, first.JSON(t)["id"])
	}
}
