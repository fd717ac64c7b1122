package config

import (
	"flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.DefaultEntity != "local" || c.Temporal.Namespace != "default" ||
		c.Temporal.TaskQueue != "trainyard-training" || c.Temporal.UIAddr != "127.0.0.1:8233" ||
		c.Temporal.FrontendAddr != "127.0.0.1:7233" || c.S3.Bucket != "trainyard" || c.LogLevel != zapcore.InfoLevel ||
		!c.S3.UsePathStyle || c.S3.Region != "us-east-1" {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if !filepath.IsAbs(c.DataDir) || filepath.Base(c.DataDir) != ".data" {
		t.Fatalf("DataDir = %q, want an absolute path ending in .data", c.DataDir)
	}
}

func TestLoadReadsEveryVariable(t *testing.T) {
	c, err := Load(envOf(map[string]string{
		EnvHTTPAddr: "0.0.0.0:9000", EnvDatabaseURL: "postgres://x/y", EnvDataDir: "/tmp/ty",
		EnvDevAPIKey: "k", EnvDefaultEntity: "team", EnvMaxBodyBytes: "1024", EnvLogLevel: "debug",
		EnvAllowFileURLs: "true", EnvTemporalAddress: "temporal:7233", EnvTemporalNamespace: "ns",
		EnvTaskQueue: "q", EnvTemporalFrontendAddr: "127.0.0.1:1", EnvTemporalUIAddr: "off",
		EnvTrainyardS3Endpoint: "http://minio:9000", EnvS3Bucket: "b", EnvS3UsePathStyle: "false",
		EnvS3Addr: "127.0.0.1:9999", EnvAWSAccessKeyID: "a", EnvAWSSecretAccessKey: "s", EnvAWSRegion: "eu-west-1",
		EnvChatConcurrency: "3", EnvChatConcurrencyPerAccount: "2", EnvAdapterCacheBytes: "4096",
		EnvTrainingConcurrency: "2", EnvS3ReadBuckets: " data-a, ,data-b ", EnvFetchConcurrency: "3",
		EnvDownloadTimeout: "90s", EnvHTTPBodyTimeout: "20s", EnvHTTPWriteTimeout: "1m", EnvMaxRequestsPerKey: "7",
		EnvDBTimeout: "3s", EnvJobDeadline: "48h", EnvMetricsAddr: "0.0.0.0:9100", EnvFetchAllowLocal: "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		HTTPAddr: "0.0.0.0:9000", DatabaseURL: "postgres://x/y", DataDir: "/tmp/ty", DevAPIKey: "k",
		DefaultEntity: "team", MaxBodyBytes: 1024, LogLevel: zapcore.DebugLevel, AllowFileURLs: true,
		FetchAllowLocal: new(bool), DBTimeout: 3 * time.Second, JobDeadline: 48 * time.Hour, MetricsAddr: "0.0.0.0:9100",
		Temporal: Temporal{Address: "temporal:7233", Namespace: "ns", TaskQueue: "q", FrontendAddr: "127.0.0.1:1", UIAddr: "off"},
		S3: S3{Endpoint: "http://minio:9000", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", Region: "eu-west-1",
			EmbeddedAddr: "127.0.0.1:9999", ReadBuckets: []string{"data-a", "data-b"}},
		HTTP:   HTTP{BodyTimeout: 20 * time.Second, WriteTimeout: time.Minute, MaxRequestsPerKey: 7},
		Chat:   Chat{Concurrency: 3, PerAccountConcurrency: 2, AdapterCacheBytes: 4096},
		Worker: Worker{TrainingConcurrency: 2, FetchConcurrency: 3, DownloadTimeout: 90 * time.Second},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("Load =\n%+v\nwant\n%+v", c, want)
	}
	if err := c.Validate(ModeProduction); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestS3EndpointPrefersTheStandardName(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvS3Endpoint: "http://a", EnvTrainyardS3Endpoint: "http://b"}))
	if err != nil || c.S3.Endpoint != "http://a" {
		t.Fatalf("endpoint = %q, %v", c.S3.Endpoint, err)
	}
}

func TestLoadReportsEveryMalformedValue(t *testing.T) {
	_, err := Load(envOf(map[string]string{
		EnvMaxBodyBytes: "lots", EnvLogLevel: "loud", EnvChatConcurrency: "-1", EnvAllowFileURLs: "maybe", EnvDownloadTimeout: "soon",
	}))
	if err == nil {
		t.Fatal("Load accepted malformed values")
	}
	for _, name := range []string{EnvMaxBodyBytes, EnvLogLevel, EnvChatConcurrency, EnvAllowFileURLs, EnvDownloadTimeout} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestValidateByMode(t *testing.T) {
	base, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		mode    Mode
		change  func(*Config)
		wantErr []string // substrings; none means valid
	}{
		{"embedded needs a database", ModeEmbedded, func(*Config) {}, []string{EnvDatabaseURL}},
		{"embedded is fine with a database", ModeEmbedded, func(c *Config) { c.DatabaseURL = "postgres://x" }, nil},
		{"production needs temporal and postgres", ModeProduction, func(*Config) {}, []string{EnvTemporalAddress, EnvDatabaseURL}},
		{"database mode needs only the URL", ModeDatabase, func(c *Config) { c.HTTPAddr = "bad" }, []string{EnvDatabaseURL}},
		{"bad addresses", ModeEmbedded, func(c *Config) {
			c.DatabaseURL = "postgres://x"
			c.HTTPAddr = "8080"
			c.Temporal.UIAddr = ":8233"
			c.Temporal.FrontendAddr = "127.0.0.1:99999"
		}, []string{EnvHTTPAddr, EnvTemporalUIAddr, EnvTemporalFrontendAddr}},
		{"ui off is valid", ModeEmbedded, func(c *Config) { c.DatabaseURL = "postgres://x"; c.Temporal.UIAddr = UIDisabled }, nil},
		{"half a key pair", ModeEmbedded, func(c *Config) { c.DatabaseURL = "postgres://x"; c.S3.AccessKeyID = "a" }, []string{EnvAWSSecretAccessKey}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			err := c.Validate(tc.mode)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted an invalid configuration")
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvHTTPAddr: "127.0.0.1:1", EnvDatabaseURL: "postgres://env"}))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse([]string{"--http-addr", "127.0.0.1:2", "--log-level", "warn", "--data-dir", "rel"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(ModeEmbedded); err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:2" || c.DatabaseURL != "postgres://env" || c.LogLevel != zapcore.WarnLevel || !filepath.IsAbs(c.DataDir) {
		t.Fatalf("after flags: %+v", c)
	}
	if err := fs.Parse([]string{"--log-level", "loud"}); err == nil {
		t.Fatal("a bad --log-level was accepted")
	}
}
