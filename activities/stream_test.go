package activities

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// cutStreams is a blob store whose job inputs break off half-way, as a
// connection to the object store reset in the middle of a read.
type cutStreams struct{ trainyard.BlobStore }

func (c cutStreams) GetJobInput(ctx context.Context, jobID, name string) (io.ReadCloser, error) {
	return cut(c.BlobStore.GetJobInput(ctx, jobID, name))
}

// cutFiles is the same for uploaded files.
type cutFiles struct{ Files }

func (c cutFiles) GetFile(ctx context.Context, accountID, name string) (io.ReadCloser, error) {
	return cut(c.Files.GetFile(ctx, accountID, name))
}

func cut(rc io.ReadCloser, err error) (io.ReadCloser, error) {
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 9000},
		Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}
	return io.NopCloser(io.MultiReader(bytes.NewReader(b[:len(b)/2]), iotestErr{reset})), nil
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

// TestPrepareSurvivesACutStream: an object-store connection that breaks
// while Prepare reads a job's input, or Fetch an upload, is an outage,
// retried, under a message without the store's address; it used to fail an
// RL job for good, as trajectory groups that "cannot be decoded", naming the
// address.
func TestPrepareSurvivesACutStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, nil)
	rl := f.newJob(t, f.model, trainyard.JobKindRL, jobspec.JobConfig{}, []byte(hugeRewards(1, 0)))
	sft := f.newJob(t, f.newModel(t), trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: "https://example.com/data.jsonl"}, nil)
	data := sftData(8)
	must(t, f.blobs.PutJobInput(context.Background(), sft.ID, jobspec.DataFile, bytes.NewReader(data), int64(len(data))))
	must(t, f.blobs.PutFile(context.Background(), f.acct.ID, jobspec.ArtifactFileName("p", "up"), bytes.NewReader(data), int64(len(data))))
	upload := f.newJob(t, f.newModel(t), trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: jobspec.ArtifactURL(f.acct.Entity, "p", "up")}, nil)
	f.acts.d.Blobs, f.acts.d.Files = cutStreams{f.blobs}, cutFiles{f.blobs}
	check := func(what string, err error) {
		t.Helper()
		var appErr *temporal.ApplicationError
		if !errorsAs(err, &appErr) || appErr.NonRetryable() || appErr.Type() != ErrInfrastructure ||
			strings.Contains(appErr.Message(), "10.9.8.7") {
			t.Errorf("%s: %v, want a retryable %s error without the store's address", what, err, ErrInfrastructure)
		}
	}
	for _, job := range []*trainyard.Job{rl, sft} {
		check("Prepare of an "+string(job.Kind)+" job", f.run(t, f.acts.Prepare, PrepareInput{JobID: job.ID, Kind: job.Kind}, nil))
	}
	check("Fetch of an upload", f.run(t, f.acts.Fetch, FetchInput{JobID: upload.ID}, nil))
}
