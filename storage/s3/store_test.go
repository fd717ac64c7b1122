package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/storage/s3"
)

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := trainyard.ErrorCode(err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

// readAll returns a function that reads a whole object, so that a Get call's
// two results can be passed straight in: readAll(t)(st.GetJobInput(...)).
func readAll(t testing.TB) func(io.ReadCloser, error) []byte {
	return func(rc io.ReadCloser, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckpointFilesRoundTrip(t *testing.T) {
	t.Parallel()
	st := s3test.New(t)
	ctx := context.Background()
	weights := randomBytes(t, 3<<20)
	cfg := []byte(`{"r": 8}`)

	if err := st.PutCheckpointFile(ctx, "m1", 1, trainyard.AdapterWeightsFile, bytes.NewReader(weights), int64(len(weights))); err != nil {
		t.Fatal(err)
	}
	// An unseekable reader (a pipe, a network body) of known size works
	// over plain HTTP too.
	if err := st.PutCheckpointFile(ctx, "m1", 1, trainyard.AdapterConfigFile, iotest.OneByteReader(bytes.NewReader(cfg)), int64(len(cfg))); err != nil {
		t.Fatal(err)
	}
	// So does one of unknown size.
	if err := st.PutCheckpointFile(ctx, "m1", 2, trainyard.OptimizerStateFile, io.MultiReader(bytes.NewReader(weights)), -1); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t)(st.GetCheckpointFile(ctx, "m1", 1, trainyard.AdapterWeightsFile)); !bytes.Equal(got, weights) {
		t.Fatal("weights differ after the round trip")
	}
	if got := readAll(t)(st.GetCheckpointFile(ctx, "m1", 1, trainyard.AdapterConfigFile)); !bytes.Equal(got, cfg) {
		t.Fatalf("config = %q", got)
	}
	if got := readAll(t)(st.GetCheckpointFile(ctx, "m1", 2, trainyard.OptimizerStateFile)); !bytes.Equal(got, weights) {
		t.Fatal("optimizer state differs after the round trip")
	}
	// Writing the same key again is fine (retried activities).
	if err := st.PutCheckpointFile(ctx, "m1", 1, trainyard.AdapterConfigFile, bytes.NewReader(cfg), int64(len(cfg))); err != nil {
		t.Fatal(err)
	}

	_, err := st.GetCheckpointFile(ctx, "m1", 3, trainyard.AdapterWeightsFile)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = st.GetCheckpointFile(ctx, "m2", 1, trainyard.AdapterWeightsFile)
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestPutRejectsWrongSize(t *testing.T) {
	t.Parallel()
	st := s3test.New(t)
	ctx := context.Background()
	body := []byte("12345")
	wantCode(t, st.PutJobInput(ctx, "j", "a", bytes.NewReader(body), 4), trainyard.EINVALID)
	wantCode(t, st.PutJobInput(ctx, "j", "a", iotest.OneByteReader(bytes.NewReader(body)), 6), trainyard.EINVALID)
	wantCode(t, st.PutJobInput(ctx, "j", "a", io.MultiReader(bytes.NewReader(randomBytes(t, 9<<20))), 10<<20), trainyard.EINVALID)
	_, err := st.GetJobInput(ctx, "j", "a")
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestInvalidNames(t *testing.T) {
	t.Parallel()
	st := s3test.New(t)
	ctx := context.Background()
	body := func() io.Reader { return strings.NewReader("x") }
	for _, c := range []struct {
		model string
		step  int
		name  string
	}{
		{"", 1, "f"}, {"..", 1, "f"}, {"a/b", 1, "f"}, {"m", -1, "f"}, {"m", 100_000_000, "f"},
		{"m", 1, ""}, {"m", 1, "../x"}, {"m", 1, "a\nb"},
	} {
		wantCode(t, st.PutCheckpointFile(ctx, c.model, c.step, c.name, body(), 1), trainyard.EINVALID)
		_, err := st.GetCheckpointFile(ctx, c.model, c.step, c.name)
		wantCode(t, err, trainyard.EINVALID)
	}
	wantCode(t, st.PutJobInput(ctx, "j/../k", "in", body(), 1), trainyard.EINVALID)
	wantCode(t, st.DeleteModelFiles(ctx, ""), trainyard.EINVALID)
	wantCode(t, st.DeleteCheckpointFiles(ctx, "m", -3), trainyard.EINVALID)
}

func TestDeleteByPrefix(t *testing.T) {
	t.Parallel()
	st := s3test.New(t)
	ctx := context.Background()
	put := func(model string, step int, name string) {
		t.Helper()
		if err := st.PutCheckpointFile(ctx, model, step, name, strings.NewReader(name), int64(len(name))); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(model string, step int, name string) bool {
		t.Helper()
		rc, err := st.GetCheckpointFile(ctx, model, step, name)
		if err == nil {
			rc.Close()
			return true
		}
		wantCode(t, err, trainyard.ENOTFOUND)
		return false
	}
	// Step 1 must not match step 10 or 100: the padded step ends with '/'.
	for _, step := range []int{1, 10, 100} {
		for _, f := range []string{trainyard.AdapterWeightsFile, trainyard.AdapterConfigFile, trainyard.OptimizerStateFile} {
			put("m", step, f)
		}
	}
	put("m-other", 1, trainyard.AdapterConfigFile) // shares the model id as a prefix
	if err := st.PutJobInput(ctx, "job", "input.json", strings.NewReader("{}"), 2); err != nil {
		t.Fatal(err)
	}

	if err := st.DeleteCheckpointFiles(ctx, "m", 1); err != nil {
		t.Fatal(err)
	}
	if exists("m", 1, trainyard.AdapterWeightsFile) || exists("m", 1, trainyard.OptimizerStateFile) {
		t.Fatal("checkpoint 1 survived its deletion")
	}
	if !exists("m", 10, trainyard.AdapterWeightsFile) || !exists("m", 100, trainyard.AdapterConfigFile) {
		t.Fatal("deleting step 1 removed other steps")
	}
	// Deleting what is not there is fine.
	if err := st.DeleteCheckpointFiles(ctx, "m", 1); err != nil {
		t.Fatal(err)
	}

	if err := st.DeleteModelFiles(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if exists("m", 10, trainyard.AdapterWeightsFile) || exists("m", 100, trainyard.OptimizerStateFile) {
		t.Fatal("model files survived the model's deletion")
	}
	if !exists("m-other", 1, trainyard.AdapterConfigFile) {
		t.Fatal("deleting model m removed model m-other")
	}
	if got := readAll(t)(st.GetJobInput(ctx, "job", "input.json")); string(got) != "{}" {
		t.Fatalf("job input = %q", got)
	}

	// A job's objects go together; a job whose id extends it stays.
	for _, name := range []string{"input.json", "state/00000001/optimizer.bin"} {
		if err := st.PutJobInput(ctx, "job", strings.ReplaceAll(name, "/", "_"), strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutJobInput(ctx, "job2", "input.json", strings.NewReader("y"), 1); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteJobFiles(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	_, err := st.GetJobInput(ctx, "job", "input.json")
	wantCode(t, err, trainyard.ENOTFOUND)
	if got := readAll(t)(st.GetJobInput(ctx, "job2", "input.json")); string(got) != "y" {
		t.Fatalf("job2 input = %q", got)
	}
	wantCode(t, st.DeleteJobFiles(ctx, "../x"), trainyard.EINVALID)
}

func TestDeleteManyObjects(t *testing.T) {
	t.Parallel()
	st := s3test.New(t)
	ctx := context.Background()
	// More than one list page (1000 keys) and one delete batch.
	const n = 1100
	for i := range n {
		name := fmt.Sprintf("shard-%04d", i)
		if err := st.PutCheckpointFile(ctx, "big", 1, name, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteModelFiles(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 999, 1000, n - 1} {
		_, err := st.GetCheckpointFile(ctx, "big", 1, fmt.Sprintf("shard-%04d", i))
		wantCode(t, err, trainyard.ENOTFOUND)
	}
}

func TestGetURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	other := s3test.New(t) // another bucket, like a user's data bucket
	cfg := s3test.Config(t)
	cfg.ReadBuckets = []string{other.Bucket(), "no-such-bucket-trainyard", "x"}
	st, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("{\"messages\":[]}\n")
	if err := other.PutJobInput(ctx, "upload", "train.jsonl", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	// An allowed bucket's object is readable by URL (jobs/ means nothing
	// outside the store's own bucket).
	url := "s3://" + other.Bucket() + "/jobs/upload/train.jsonl"
	if got := readAll(t)(st.GetURL(ctx, url)); !bytes.Equal(got, data) {
		t.Fatalf("GetURL = %q", got)
	}
	_, err = st.GetURL(ctx, "s3://"+other.Bucket()+"/missing.jsonl")
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = st.GetURL(ctx, "s3://no-such-bucket-trainyard/x")
	wantCode(t, err, trainyard.ENOTFOUND)

	// The store's own objects are unreachable by URL, even an upload the
	// caller could name, and so is a bucket off the list.
	if err := st.PutFile(ctx, "acct", "artifacts/p/n/v0/data.jsonl", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"", "train.jsonl", "https://example.com/x", "s3://", "s3:///key", "s3://bucket", "s3://bucket/",
		"s3://bucket/dir/", "s3://user:pw@bucket/key", "s3://bucket/key?versionId=1", "file:///etc/passwd",
		"s3://" + st.Bucket() + "/jobs/someone/input.json", "s3://" + st.Bucket() + "/models/m/checkpoints/00000001/optimizer.bin",
		"s3://" + st.Bucket() + "/files/acct/artifacts/p/n/v0/data.jsonl",
		"s3://" + st.Bucket() + "/x/../files/acct/artifacts/p/n/v0/data.jsonl",
		"s3://" + other.Bucket() + "/../" + st.Bucket() + "/files/acct/artifacts/p/n/v0/data.jsonl",
		"s3://" + other.Bucket() + "/%2E%2E/" + st.Bucket() + "/files/acct/artifacts/p/n/v0/data.jsonl",
		"s3://not-listed-bucket/train.jsonl",
	} {
		_, err := st.GetURL(ctx, bad)
		wantCode(t, err, trainyard.EINVALID)
	}
}

func TestPingAndEnsureBucket(t *testing.T) {
	t.Parallel()
	st := s3test.New(t)
	ctx := context.Background()
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureBucket(ctx); err != nil {
		t.Fatalf("EnsureBucket on an existing bucket: %v", err)
	}
	cfg := s3test.Server(t)
	cfg.Bucket = "never-created-bucket"
	missing, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, missing.Ping(ctx), trainyard.ENOTFOUND)

	cfg.Endpoint = "http://127.0.0.1:1"
	down, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, down.Ping(ctx), trainyard.EUNAVAILABLE)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := st.Ping(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ping with a cancelled context = %v", err)
	}
	_, err = s3.New(ctx, s3.Config{Endpoint: cfg.Endpoint})
	wantCode(t, err, trainyard.EINVALID)
}

func BenchmarkPutGetCheckpointFile(b *testing.B) {
	st := s3test.New(b)
	ctx := context.Background()
	body := randomBytes(b, 4<<20)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := st.PutCheckpointFile(ctx, "bench", 1, trainyard.AdapterWeightsFile, bytes.NewReader(body), int64(len(body))); err != nil {
			b.Fatal(err)
		}
		rc, err := st.GetCheckpointFile(ctx, "bench", 1, trainyard.AdapterWeightsFile)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}
