package s3gw_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/s3gw"
	"github.com/trainyard/trainyard/storage/s3"
)

func TestMain(m *testing.M) {
	s3gw.ServeIfChild()
	os.Exit(m.Run())
}

func config(dir string) s3gw.Config {
	return s3gw.Config{Dir: dir, Addr: "127.0.0.1:0", AccessKeyID: "test-access", SecretAccessKey: "test-secret-key", Region: "us-east-1"}
}

// roundTrip stores an object through the AWS SDK and reads it back.
func roundTrip(t *testing.T, endpoint, bucket string, body []byte, put bool) {
	t.Helper()
	ctx := context.Background()
	st, err := s3.New(ctx, s3.Config{Endpoint: endpoint, AccessKeyID: "test-access", SecretAccessKey: "test-secret-key", Bucket: bucket, UsePathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if put {
		if err := st.EnsureBucket(ctx); err != nil {
			t.Fatal(err)
		}
		if err := st.PutJobInput(ctx, "job-1", "input.json", bytes.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := st.GetJobInput(ctx, "job-1", "input.json")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %q (err %v), want %q", got, err, body)
	}
}

func TestInProcessGateway(t *testing.T) {
	// The posix backend moves the process into the gateway's directory;
	// t.Chdir puts the test process back where it was afterwards.
	t.Chdir(".")
	ctx := context.Background()
	dir := t.TempDir()
	srv, err := s3gw.Start(ctx, config(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3gw.Start(ctx, config(t.TempDir())); err == nil {
		t.Fatal("a second gateway in one process started")
	}
	roundTrip(t, srv.Endpoint(), "keep", []byte(`{"a":1}`), true)
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Close(closeCtx); err != nil {
		t.Fatal(err)
	}

	// Restarted on the same directory, the gateway still has the object.
	srv, err = s3gw.Start(ctx, config(dir))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, srv.Endpoint(), "keep", []byte(`{"a":1}`), false)
	if err := srv.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
}

func TestChildProcessGateway(t *testing.T) {
	ctx := context.Background()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "gw")
	srv, err := s3gw.StartProcess(ctx, config(dir), s3gw.ProcessOptions{RemoveDirOnExit: true})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, srv.Endpoint(), "child", bytes.Repeat([]byte("x"), 1<<20), true)
	if now, _ := os.Getwd(); now != wd {
		t.Fatalf("working directory changed from %s to %s", wd, now)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("child left its data directory behind: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []s3gw.Config{
		{AccessKeyID: "a", SecretAccessKey: "b"},
		{Dir: t.TempDir()},
	} {
		if _, err := s3gw.Start(ctx, c); err == nil {
			t.Fatalf("Start(%+v) succeeded", c)
		}
		if _, err := s3gw.StartProcess(ctx, c, s3gw.ProcessOptions{}); err == nil {
			t.Fatalf("StartProcess(%+v) succeeded", c)
		}
	}
	if _, err := s3gw.Start(ctx, s3gw.Config{Dir: t.TempDir(), Addr: "nonsense", AccessKeyID: "a", SecretAccessKey: "b"}); err == nil {
		t.Fatal("a bad address was accepted")
	}
}
