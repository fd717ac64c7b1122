package config

import (
	"flag"
	"os"
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
		!c.S3.UsePathStyle || c.S3.Region != "us-east-1" || c.Chat.BF16Dot != nil || c.Worker.BF16Train != nil {
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
		EnvTemporalUIURL: "https://temporal.example", EnvTrainyardS3Endpoint: "http://minio:9000", EnvS3Bucket: "b", EnvS3UsePathStyle: "false",
		EnvS3Addr: "127.0.0.1:9999", EnvAWSAccessKeyID: "a", EnvAWSSecretAccessKey: "s", EnvAWSRegion: "eu-west-1",
		EnvChatConcurrency: "3", EnvChatConcurrencyPerAccount: "2", EnvAdapterCacheBytes: "4096",
		EnvTrainingConcurrency: "2", EnvS3ReadBuckets: " data-a, ,data-b ", EnvFetchConcurrency: "3",
		EnvDownloadTimeout: "90s", EnvDownloadRetryWindow: "2m", EnvHTTPBodyTimeout: "20s", EnvHTTPWriteTimeout: "1m", EnvMaxRequestsPerKey: "7",
		EnvDBTimeout: "3s", EnvJobDeadline: "48h", EnvMetricsAddr: "0.0.0.0:9100", EnvFetchAllowLocal: "false",
		EnvInference: "remote", EnvInferHeartbeat: "500ms", EnvInferAdvertiseAddr: "10.1.2.3:8081",
		EnvBaseModels: "trainyard/tiny-chat, acme/llama=/models/llama", EnvMemoryLimit: "8GiB",
		EnvChatBF16Dot: "false", EnvTrainBF16: "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := Config{
		HTTPAddr: "0.0.0.0:9000", DatabaseURL: "postgres://x/y", DataDir: "/tmp/ty", DevAPIKey: "k",
		DefaultEntity: "team", MaxBodyBytes: 1024, LogLevel: zapcore.DebugLevel, AllowFileURLs: true,
		FetchAllowLocal: new(bool), DBTimeout: 3 * time.Second, JobDeadline: 48 * time.Hour, MetricsAddr: "0.0.0.0:9100",
		Temporal: Temporal{Address: "temporal:7233", Namespace: "ns", TaskQueue: "q", FrontendAddr: "127.0.0.1:1", UIAddr: "off",
			UIURL: "https://temporal.example"},
		S3: S3{Endpoint: "http://minio:9000", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", Region: "eu-west-1",
			EmbeddedAddr: "127.0.0.1:9999", ReadBuckets: []string{"data-a", "data-b"}},
		HTTP:          HTTP{BodyTimeout: 20 * time.Second, WriteTimeout: time.Minute, MaxRequestsPerKey: 7},
		Chat:          Chat{Concurrency: 3, PerAccountConcurrency: 2, AdapterCacheBytes: 4096, BF16Dot: new(bool)},
		Worker:        Worker{TrainingConcurrency: 2, FetchConcurrency: 3, DownloadTimeout: 90 * time.Second, DownloadRetryWindow: 2 * time.Minute, MemoryLimit: 8 << 30, BF16Train: &yes},
		Inference:     Inference{Mode: InferenceRemote, Heartbeat: 500 * time.Millisecond, AdvertiseAddr: "10.1.2.3:8081"},
		BaseModels:    []string{"trainyard/tiny-chat", "acme/llama"},
		BaseModelDirs: map[string]string{"acme/llama": "/models/llama"},
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
		{"a UI URL a browser can follow", ModeProduction, func(c *Config) {
			c.DatabaseURL, c.Temporal.Address, c.Temporal.UIURL = "postgres://x", "t:7233", "http://temporal-ui:8080/"
		}, nil},
		{"a UI URL that is no web address", ModeProduction, func(c *Config) {
			c.DatabaseURL, c.Temporal.Address, c.Temporal.UIURL = "postgres://x", "t:7233", "javascript:alert(1)"
		}, []string{EnvTemporalUIURL}},
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

func TestInferenceSettings(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		mode Mode
		want string // in the error; "" = valid
	}{
		{map[string]string{EnvDatabaseURL: "postgres://x/y"}, ModeInference, ""},
		{map[string]string{}, ModeInference, EnvDatabaseURL},
		{map[string]string{EnvDatabaseURL: "postgres://x/y", EnvInference: "remote"}, ModeEmbedded, "serve runs chat"},
		{map[string]string{EnvDatabaseURL: "postgres://x/y", EnvTemporalAddress: "t:7233", EnvInference: "elsewhere"}, ModeProduction, EnvInference},
		{map[string]string{EnvDatabaseURL: "postgres://x/y", EnvInferAdvertiseAddr: "nohost"}, ModeInference, EnvInferAdvertiseAddr},
	} {
		c, err := Load(envOf(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate(tc.mode)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v in mode %d: %v, want %q", tc.env, tc.mode, err, tc.want)
		}
	}
	for _, bad := range []string{"a=", "=dir", "a,a", "a=/x,a"} {
		if _, err := Load(envOf(map[string]string{EnvBaseModels: bad})); err == nil || !strings.Contains(err.Error(), EnvBaseModels) {
			t.Errorf("%s=%q: %v", EnvBaseModels, bad, err)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	defer func(f func() int64) { cgroupMemoryLimit = f }(cgroupMemoryLimit)
	cgroupMemoryLimit = func() int64 { return 6 << 30 }
	for v, want := range map[string]int64{"": 6 << 30, "none": 0, "off": 0, "0": 0, "8GiB": 8 << 30, "8 gib": 8 << 30,
		"512MiB": 512 << 20, "2.5GB": 2_500_000_000, "1048576": 1 << 20, "3G": 3 << 30, "100kB": 100_000} {
		c, err := Load(envOf(map[string]string{EnvMemoryLimit: v}))
		if err != nil || c.Worker.MemoryLimit != want {
			t.Errorf("%s=%q: %d, %v; want %d", EnvMemoryLimit, v, c.Worker.MemoryLimit, err, want)
		}
	}
	for _, v := range []string{"lots", "-1GiB", "8 parsecs", "1e3"} {
		if _, err := Load(envOf(map[string]string{EnvMemoryLimit: v})); err == nil || !strings.Contains(err.Error(), EnvMemoryLimit) {
			t.Errorf("%s=%q: err = %v, want one naming the variable", EnvMemoryLimit, v, err)
		}
	}
}

func TestCgroupValue(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]int64{"max\n": 0, "9223372036854771712\n": 0, "4294967296\n": 4 << 30, "": 0} {
		f := filepath.Join(dir, "limit")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := cgroupValue(f); got != want {
			t.Errorf("cgroup file %q: %d, want %d", content, got, want)
		}
	}
	if got := cgroupValue(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing file: %d", got)
	}
}

func TestModelsDirDefaultsUnderDataDir(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvDataDir: "/tmp/ty"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ModelsDirPath(); got != "/tmp/ty/models" {
		t.Fatalf("default models dir %q", got)
	}
	c, err = Load(envOf(map[string]string{EnvDataDir: "/tmp/ty", EnvModelsDir: "/srv/models"}))
	if err != nil || c.ModelsDirPath() != "/srv/models" {
		t.Fatalf("%s: %q %v", EnvModelsDir, c.ModelsDirPath(), err)
	}
}
