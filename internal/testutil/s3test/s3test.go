// Package s3test gives each test its own bucket on a real S3-compatible
// server: $TRAINYARD_TEST_S3_ENDPOINT when set (with the credentials in
// TRAINYARD_TEST_S3_ACCESS_KEY_ID, TRAINYARD_TEST_S3_SECRET_ACCESS_KEY and
// TRAINYARD_TEST_S3_REGION), otherwise an embedded versitygw gateway that the
// test process starts once, on a temporary directory.
//
// The embedded gateway runs in a child process (this same test binary, see
// s3gw.StartProcess), because versitygw's posix backend would otherwise move
// the test process into its data directory and break relative paths such as
// testdata/. Importing this package installs that child hook in an init
// function; the child stops when the test process exits and removes its
// directory.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/s3gw"
	"github.com/trainyard/trainyard/storage/s3"
)

// Environment variables that point tests at an external server.
const (
	EnvEndpoint        = "TRAINYARD_TEST_S3_ENDPOINT"
	EnvAccessKeyID     = "TRAINYARD_TEST_S3_ACCESS_KEY_ID"
	EnvSecretAccessKey = "TRAINYARD_TEST_S3_SECRET_ACCESS_KEY"
	EnvRegion          = "TRAINYARD_TEST_S3_REGION"
)

// Credentials of the embedded gateway.
const (
	embeddedAccessKeyID     = "trainyard-test"
	embeddedSecretAccessKey = "trainyard-test-secret"
)

func init() { s3gw.ServeIfChild() }

var server struct {
	once sync.Once
	cfg  s3.Config // without a bucket
	err  error
}

// New returns a Store on a fresh, empty bucket that is removed when the test
// ends.
func New(t testing.TB) *s3.Store {
	t.Helper()
	st, err := s3.New(context.Background(), Config(t))
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return st
}

// Config returns the configuration of a fresh, created bucket (removed when
// the test ends): endpoint, region and credentials included, for tests that
// hand object storage to another process.
func Config(t testing.TB) s3.Config {
	t.Helper()
	cfg := Server(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("s3test: %v", err)
	}
	cfg.Bucket = fmt.Sprintf("t-%d-%s", time.Now().Unix(), hex.EncodeToString(b[:]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	if err := st.EnsureBucket(ctx); err != nil {
		t.Fatalf("s3test: create bucket %s at %s: %v", cfg.Bucket, cfg.Endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := st.RemoveBucket(ctx); err != nil {
			t.Errorf("s3test: remove bucket %s: %v", cfg.Bucket, err)
		}
	})
	return cfg
}

// Server returns the endpoint, region and credentials of the test server
// (Bucket empty), starting the embedded gateway on first use.
func Server(t testing.TB) s3.Config {
	t.Helper()
	server.once.Do(func() { server.cfg, server.err = start() })
	if server.err != nil {
		t.Fatalf("s3test: %v", server.err)
	}
	return server.cfg
}

func start() (s3.Config, error) {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		region := os.Getenv(EnvRegion)
		if region == "" {
			region = "us-east-1"
		}
		return s3.Config{
			Endpoint:        ep,
			Region:          region,
			AccessKeyID:     os.Getenv(EnvAccessKeyID),
			SecretAccessKey: os.Getenv(EnvSecretAccessKey),
			UsePathStyle:    true,
		}, nil
	}
	dir, err := os.MkdirTemp("", "trainyard-s3test-*")
	if err != nil {
		return s3.Config{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The server lives as long as the test process: there is no process
	// teardown hook in a test helper, and the child exits (removing dir)
	// when this process does.
	srv, err := s3gw.StartProcess(ctx, s3gw.Config{
		Dir:             dir,
		Addr:            "127.0.0.1:0",
		AccessKeyID:     embeddedAccessKeyID,
		SecretAccessKey: embeddedSecretAccessKey,
		Region:          "us-east-1",
	}, s3gw.ProcessOptions{RemoveDirOnExit: true})
	if err != nil {
		os.RemoveAll(dir)
		return s3.Config{}, fmt.Errorf("start the embedded S3 gateway: %w", err)
	}
	return s3.Config{
		Endpoint:        srv.Endpoint(),
		Region:          "us-east-1",
		AccessKeyID:     embeddedAccessKeyID,
		SecretAccessKey: embeddedSecretAccessKey,
		UsePathStyle:    true,
	}, nil
}
