package s3_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/storage/s3"
)

// TestCheckpointReadBackFromMemory checks that a checkpoint file this store wrote is read back from its copy
// while the server says the object is unchanged, and from the server once another writer (another process's
// store) replaced it or it was deleted.
func TestCheckpointReadBackFromMemory(t *testing.T) {
	ctx := context.Background()
	cfg := s3test.Config(t)
	st, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const model = "0190f5f0-0000-7000-8000-000000000001"
	first := randomBytes(t, 1<<20)
	if err := st.PutCheckpointFile(ctx, model, 3, trainyard.AdapterWeightsFile, bytes.NewReader(first), int64(len(first))); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t)(st.GetCheckpointFile(ctx, model, 3, trainyard.AdapterWeightsFile)); !bytes.Equal(got, first) {
		t.Fatal("the file read back differs from the one stored")
	}
	if hits := st.RecentHits(); hits != 1 {
		t.Fatalf("%d reads answered from memory, want 1", hits)
	}

	// Another writer replaces the object: the copy is not served.
	second := randomBytes(t, 1<<20)
	if err := other.PutCheckpointFile(ctx, model, 3, trainyard.AdapterWeightsFile, bytes.NewReader(second), int64(len(second))); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t)(st.GetCheckpointFile(ctx, model, 3, trainyard.AdapterWeightsFile)); !bytes.Equal(got, second) {
		t.Fatal("a replaced object was read from the stale copy")
	}
	if hits := st.RecentHits(); hits != 1 {
		t.Fatalf("%d reads answered from memory after the object changed, want still 1", hits)
	}

	// Deleted by another writer: not found, whatever was kept.
	if err := st.PutCheckpointFile(ctx, model, 4, trainyard.AdapterWeightsFile, bytes.NewReader(first), int64(len(first))); err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteCheckpointFiles(ctx, model, 4); err != nil {
		t.Fatal(err)
	}
	_, err = st.GetCheckpointFile(ctx, model, 4, trainyard.AdapterWeightsFile)
	wantCode(t, err, trainyard.ENOTFOUND)
}
