package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
)

// Environment variables, documented in README.md's configuration table.
const (
	EnvHTTPAddr                  = "TRAINYARD_HTTP_ADDR"
	EnvDatabaseURL               = "DATABASE_URL"
	EnvDBTimeout                 = "TRAINYARD_DB_TIMEOUT"
	EnvJobDeadline               = "TRAINYARD_JOB_DEADLINE"
	EnvHeartbeatTimeout          = "TRAINYARD_HEARTBEAT_TIMEOUT"
	EnvMaxWorkersPerJob          = "TRAINYARD_MAX_WORKERS_PER_JOB"
	EnvTrainChunk                = "TRAINYARD_TRAIN_CHUNK"
	EnvTrainBF16                 = "TRAINYARD_TRAIN_BF16"
	EnvServedWindow              = "TRAINYARD_RETENTION_SERVED_WINDOW"
	EnvMetricsAddr               = "TRAINYARD_METRICS_ADDR"
	EnvDataDir                   = "TRAINYARD_DATA_DIR"
	EnvDevAPIKey                 = "TRAINYARD_DEV_API_KEY"
	EnvDefaultEntity             = "TRAINYARD_DEFAULT_ENTITY"
	EnvMaxBodyBytes              = "TRAINYARD_MAX_BODY_BYTES"
	EnvLogLevel                  = "TRAINYARD_LOG_LEVEL"
	EnvAllowFileURLs             = "TRAINYARD_ALLOW_FILE_URLS"
	EnvFetchAllowLocal           = "TRAINYARD_FETCH_ALLOW_LOCAL"
	EnvTemporalAddress           = "TEMPORAL_ADDRESS"
	EnvTemporalNamespace         = "TEMPORAL_NAMESPACE"
	EnvTaskQueue                 = "TRAINYARD_TASK_QUEUE"
	EnvTemporalFrontendAddr      = "TRAINYARD_TEMPORAL_FRONTEND_ADDR"
	EnvTemporalUIAddr            = "TRAINYARD_TEMPORAL_UI_ADDR"
	EnvTemporalUIURL             = "TRAINYARD_TEMPORAL_UI_URL"
	EnvS3Endpoint                = "S3_ENDPOINT"
	EnvTrainyardS3Endpoint       = "TRAINYARD_S3_ENDPOINT"
	EnvS3Bucket                  = "S3_BUCKET"
	EnvS3UsePathStyle            = "S3_USE_PATH_STYLE"
	EnvS3Addr                    = "TRAINYARD_S3_ADDR"
	EnvS3ReadBuckets             = "TRAINYARD_S3_READ_BUCKETS"
	EnvAWSAccessKeyID            = "AWS_ACCESS_KEY_ID"
	EnvAWSSecretAccessKey        = "AWS_SECRET_ACCESS_KEY"
	EnvAWSRegion                 = "AWS_REGION"
	EnvChatConcurrency           = "TRAINYARD_CHAT_CONCURRENCY"
	EnvChatConcurrencyPerAccount = "TRAINYARD_CHAT_CONCURRENCY_PER_ACCOUNT"
	EnvAdapterCacheBytes         = "TRAINYARD_ADAPTER_CACHE_BYTES"
	EnvChatKVCacheBytes          = "TRAINYARD_CHAT_KV_CACHE_BYTES"
	EnvChatQueueLength           = "TRAINYARD_CHAT_QUEUE_LENGTH"
	EnvChatQueueWait             = "TRAINYARD_CHAT_QUEUE_WAIT"
	EnvChatBF16Dot               = "TRAINYARD_CHAT_BF16_DOT"
	EnvTrainingConcurrency       = "TRAINYARD_TRAINING_CONCURRENCY"
	EnvFetchConcurrency          = "TRAINYARD_FETCH_CONCURRENCY"
	EnvDownloadTimeout           = "TRAINYARD_DOWNLOAD_TIMEOUT"
	EnvDownloadRetryWindow       = "TRAINYARD_DOWNLOAD_RETRY_WINDOW"
	EnvHTTPBodyTimeout           = "TRAINYARD_HTTP_BODY_TIMEOUT"
	EnvHTTPWriteTimeout          = "TRAINYARD_HTTP_WRITE_TIMEOUT"
	EnvMaxRequestsPerKey         = "TRAINYARD_MAX_REQUESTS_PER_KEY"
	EnvBaseModels                = "TRAINYARD_BASE_MODELS"
	EnvModelsDir                 = "TRAINYARD_MODELS_DIR"
	EnvInference                 = "TRAINYARD_INFERENCE"
	EnvInferHeartbeat            = "TRAINYARD_INFER_HEARTBEAT"
	EnvInferAdvertiseAddr        = "TRAINYARD_INFER_ADVERTISE_ADDR"
)

// env reads typed variables and collects every parse error, so one run
// reports all of them.
type env struct {
	get  func(string) string
	errs []error
}

func (e *env) str(name, def string) string {
	if v := strings.TrimSpace(e.get(name)); v != "" {
		return v
	}
	return def
}

// list reads a comma-separated list, dropping blanks.
func (e *env) list(name string) []string {
	var out []string
	for _, v := range strings.Split(e.get(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// baseModels reads a comma-separated list of base model names, each
// optionally name=dir; the directories are made absolute.
func (e *env) baseModels(name string) ([]string, map[string]string) {
	var names []string
	var dirs map[string]string
	for _, item := range e.list(name) {
		model, dir, hasDir := strings.Cut(item, "=")
		model, dir = strings.TrimSpace(model), strings.TrimSpace(dir)
		switch {
		case model == "" || hasDir && dir == "":
			e.errs = append(e.errs, fmt.Errorf("%s: %q: want NAME or NAME=DIRECTORY", name, item))
			continue
		case slices.Contains(names, model):
			e.errs = append(e.errs, fmt.Errorf("%s: %q is listed twice", name, model))
			continue
		}
		names = append(names, model)
		if hasDir {
			abs, err := filepath.Abs(dir)
			if err != nil {
				e.errs = append(e.errs, fmt.Errorf("%s: %q: %w", name, item, err))
				continue
			}
			if dirs == nil {
				dirs = map[string]string{}
			}
			dirs[model] = abs
		}
	}
	return names, dirs
}

func (e *env) int64(name string, def int64) int64 {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a non-negative integer", name, v))
		return def
	}
	return n
}

// duration reads a Go duration such as "30s" or "5m".
func (e *env) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a duration such as 30s or 5m", name, v))
		return def
	}
	return d
}

func (e *env) bool(name string, def bool) bool {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want true or false", name, v))
		return def
	}
	return b
}

// optBool reads a boolean that may be unset (nil).
func (e *env) optBool(name string) *bool {
	if strings.TrimSpace(e.get(name)) == "" {
		return nil
	}
	b := e.bool(name, false)
	return &b
}

func (e *env) level(name string, def zapcore.Level) zapcore.Level {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return def
	}
	var l zapcore.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want debug, info, warn or error", name, v))
		return def
	}
	return l
}

// checkHostPort accepts host:port with a non-empty host and a numeric port
// (0 allowed: any free port).
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if host == "" {
		return errors.New("want host:port with a host, e.g. 127.0.0.1 or 0.0.0.0")
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return errors.New("want a port between 0 and 65535")
	}
	return nil
}

// checkWebURL accepts an absolute http(s) URL, as a browser would follow
// it from a link.
func checkWebURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http:// or https:// URL, e.g. http://temporal-ui.example:8080")
	}
	return nil
}
