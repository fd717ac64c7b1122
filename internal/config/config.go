// Package config is trainyard's process configuration: every environment
// variable the trainyard command reads, with its default, its validation and
// the flags that override it, in one place. README.md documents the same
// table for users.
package config

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap/zapcore"
)

// Config is the parsed configuration. Load fills it from the environment;
// BindFlags lets command-line flags override some fields; Validate checks
// the result for the mode a command runs in.
type Config struct {
	// HTTPAddr is where the API listens (TRAINYARD_HTTP_ADDR).
	HTTPAddr string
	// DatabaseURL is the PostgreSQL URL (DATABASE_URL).
	DatabaseURL string
	// MetricsAddr is where `worker` serves /metrics
	// (TRAINYARD_METRICS_ADDR, default 127.0.0.1:9090; "off" disables it).
	// The API serves /metrics on its own port.
	MetricsAddr string
	// JobDeadline bounds a training job from its start
	// (TRAINYARD_JOB_DEADLINE); 0 is the workflows' default (24 h). Until it
	// passes, outages of the platform's own dependencies only delay jobs.
	JobDeadline time.Duration
	// MaxWorkersPerJob is how many workers holding a job's base model one
	// step of it may be spread over (TRAINYARD_MAX_WORKERS_PER_JOB; 0 or 1:
	// every step runs on one worker). Read by the API, which writes it into
	// the jobs it starts.
	MaxWorkersPerJob int
	// HeartbeatTimeout is how long a job's Prepare or Train may go without
	// a heartbeat before Temporal gives it to another worker
	// (TRAINYARD_HEARTBEAT_TIMEOUT, read where jobs are started: api,
	// serve, worker); 0 is the workflows' default (15 s). It bounds how long
	// a killed worker's job waits before another holder takes it over.
	HeartbeatTimeout time.Duration
	// ServedWindow is how long retention treats a checkpoint as being
	// served after a chat completion last used it
	// (TRAINYARD_RETENTION_SERVED_WINDOW); 0 is retention's default (10 min).
	ServedWindow time.Duration
	// DBTimeout bounds each database statement or transaction
	// (TRAINYARD_DB_TIMEOUT); 0 is the storage default (5 s). An API request
	// that meets a database which stopped answering gets 503 after it.
	DBTimeout time.Duration
	// DataDir holds the embedded stack's state and the generated dev key
	// (TRAINYARD_DATA_DIR); always absolute after Load.
	DataDir string
	// DevAPIKey is the default account's key in `serve`
	// (TRAINYARD_DEV_API_KEY); generated and kept in DataDir when empty.
	DevAPIKey string
	// DefaultEntity is the default account's entity (TRAINYARD_DEFAULT_ENTITY).
	DefaultEntity string
	// MaxBodyBytes limits API request bodies (TRAINYARD_MAX_BODY_BYTES);
	// 0 keeps the API's default.
	MaxBodyBytes int64
	// LogLevel is the minimum level logged (TRAINYARD_LOG_LEVEL).
	LogLevel zapcore.Level
	// AllowFileURLs lets jobs read file:// training data from the worker's
	// disk (TRAINYARD_ALLOW_FILE_URLS; development only).
	AllowFileURLs bool
	// FetchAllowLocal lets http(s) training data come from loopback and
	// private-network addresses (TRAINYARD_FETCH_ALLOW_LOCAL); nil means
	// the mode's default: loopback only in `serve`, neither in
	// `api`/`worker`.
	FetchAllowLocal *bool

	// BaseModels are the base models this process serves chat
	// completions for (TRAINYARD_BASE_MODELS: `infer`, and `api` or `serve`
	// with local inference), in order: the first answers requests that name
	// no model. Empty means every base model the process knows.
	BaseModels []string
	// BaseModelDirs are the base models given as name=dir in
	// TRAINYARD_BASE_MODELS: Hugging Face-style directories (config.json +
	// safetensors) any command can open under that name.
	BaseModelDirs map[string]string
	// ModelsDir holds Hugging Face snapshots, each a base model named by its
	// path under the directory, e.g. Qwen/Qwen3-0.6B (TRAINYARD_MODELS_DIR);
	// empty means models/ under DataDir (see ModelsDirPath).
	ModelsDir string

	HTTP      HTTP
	Temporal  Temporal
	S3        S3
	Chat      Chat
	Worker    Worker
	Inference Inference
}

// HTTP bounds what one client can hold of the API server.
type HTTP struct {
	// BodyTimeout bounds reading one request body (TRAINYARD_HTTP_BODY_TIMEOUT);
	// 0 is the API's default.
	BodyTimeout time.Duration
	// WriteTimeout bounds writing a response that is not a stream
	// (TRAINYARD_HTTP_WRITE_TIMEOUT); 0 is the API's default.
	WriteTimeout time.Duration
	// MaxRequestsPerKey caps the requests one API key has in flight
	// (TRAINYARD_MAX_REQUESTS_PER_KEY); past it requests get 429. 0 is the
	// API's default.
	MaxRequestsPerKey int
}

// Temporal configures the connection to Temporal and the embedded server.
type Temporal struct {
	// Address of an external frontend (TEMPORAL_ADDRESS). Empty in `serve`
	// means: run the embedded server.
	Address string
	// Namespace (TEMPORAL_NAMESPACE).
	Namespace string
	// TaskQueue of the job workflows (TRAINYARD_TASK_QUEUE).
	TaskQueue string
	// FrontendAddr is the embedded server's gRPC address
	// (TRAINYARD_TEMPORAL_FRONTEND_ADDR).
	FrontendAddr string
	// UIAddr is the embedded Web UI's address (TRAINYARD_TEMPORAL_UI_ADDR);
	// "off" disables the UI.
	UIAddr string
	// UIURL is the Temporal Web UI's base URL as a browser reaches it
	// (TRAINYARD_TEMPORAL_UI_URL), for the dashboard's links to job
	// workflows; `serve` defaults it to the embedded UI's address, other
	// commands to none.
	UIURL string
}

// S3 configures object storage.
type S3 struct {
	// Endpoint of an external S3-compatible server (S3_ENDPOINT or
	// TRAINYARD_S3_ENDPOINT). Empty in `serve` means: run the embedded
	// gateway; empty in production means AWS itself.
	Endpoint string
	// Bucket (S3_BUCKET).
	Bucket string
	// AccessKeyID and SecretAccessKey (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY); without them the AWS default chain applies.
	AccessKeyID, SecretAccessKey string
	// Region (AWS_REGION).
	Region string
	// UsePathStyle addresses buckets by path (S3_USE_PATH_STYLE), which
	// MinIO and most S3-compatible servers need; default true with an
	// Endpoint.
	UsePathStyle bool
	// ReadBuckets are the buckets besides Bucket whose objects SFT jobs
	// may name as s3:// training data (TRAINYARD_S3_READ_BUCKETS,
	// comma-separated; default none). Bucket itself is never readable by
	// URL: uploads are reached through their wandb-artifact URLs.
	ReadBuckets []string
	// EmbeddedAddr is the embedded gateway's listen address
	// (TRAINYARD_S3_ADDR); port 0 picks a free port.
	EmbeddedAddr string
}

// Chat configures chat completions serving.
type Chat struct {
	// Concurrency caps the completions decoded at once, the rows of the
	// batched decoding steps (TRAINYARD_CHAT_CONCURRENCY); 0 is the serving
	// package's default (32 × cores). Requests past it wait in a queue.
	Concurrency int
	// PerAccountConcurrency caps one account's rows while other accounts
	// wait (TRAINYARD_CHAT_CONCURRENCY_PER_ACCOUNT); 0 means half of
	// Concurrency.
	PerAccountConcurrency int
	// KVCacheBytes bounds the decoding caches admitted at once
	// (TRAINYARD_CHAT_KV_CACHE_BYTES); 0 means a quarter of
	// TRAINYARD_MEMORY_LIMIT when that is set, else the serving default.
	KVCacheBytes int64
	// QueueLength bounds the chat requests waiting for room
	// (TRAINYARD_CHAT_QUEUE_LENGTH); past it they get 429. 0 is the serving
	// default.
	QueueLength int
	// QueueWait bounds how long a chat request waits for room before it
	// gets 429 (TRAINYARD_CHAT_QUEUE_WAIT); 0 is the serving default.
	QueueWait time.Duration
	// BF16Dot turns chat's bfloat16 products on or off where the CPU
	// has them (TRAINYARD_CHAT_BF16_DOT); unset (nil), they are on where
	// they outrun the float32 kernels (linalg.BF16Pays: AMX tiles, AMD's
	// VDPBF16PS). Activations are rounded to bfloat16.
	BF16Dot *bool
	// AdapterCacheBytes bounds the adapters kept loaded
	// (TRAINYARD_ADAPTER_CACHE_BYTES); 0 is the serving default.
	AdapterCacheBytes int64
}

// Worker configures the Temporal worker.
type Worker struct {
	// TrainingConcurrency is how many training activities one worker runs
	// at once (TRAINYARD_TRAINING_CONCURRENCY); 0 is the worker default (1).
	TrainingConcurrency int
	// FetchConcurrency is how many training-data downloads one worker runs
	// at once, apart from training (TRAINYARD_FETCH_CONCURRENCY); 0 is the
	// worker default.
	FetchConcurrency int
	// DownloadTimeout bounds one attempt at downloading training data,
	// however steadily it trickles (TRAINYARD_DOWNLOAD_TIMEOUT); 0 is the
	// activities' default.
	DownloadTimeout time.Duration
	// DownloadRetryWindow bounds how long a training_data_url that keeps
	// failing in a way that may pass is retried before its job fails,
	// from the job's first download attempt
	// (TRAINYARD_DOWNLOAD_RETRY_WINDOW); 0 is the activities' default.
	DownloadRetryWindow time.Duration
	// MemoryLimit is the memory a training job may count on, in bytes
	// (TRAINYARD_MEMORY_LIMIT, e.g. 8GiB; default: the cgroup's memory
	// limit when there is one, else none; 0 = none). A job whose step cannot
	// fit fails at its start instead of being killed for running out.
	MemoryLimit int64
	// ChunkDuration is about how long one Train activity runs before it
	// reports back to its workflow (TRAINYARD_TRAIN_CHUNK); 0 is the
	// activities' default (20 s).
	ChunkDuration time.Duration
	// BF16Train turns training's bfloat16 products with the frozen base on
	// or off where the CPU has them (AMX tiles, or VDPBF16PS on avx512_bf16;
	// TRAINYARD_TRAIN_BF16); unset (nil), they are on where they outrun the
	// float32 kernels (linalg.BF16Pays). Activations and output gradients
	// are rounded to bfloat16 for those products, as PyTorch's bf16 autocast
	// rounds them; adapters, their gradients and the optimizer stay float32.
	BF16Train *bool
}

// MetricsOff is the TRAINYARD_METRICS_ADDR value that turns a worker's
// metrics listener off.
const MetricsOff = "off"

// UIDisabled is the TRAINYARD_TEMPORAL_UI_ADDR value that turns the
// embedded Web UI off.
const UIDisabled = "off"

// Mode says which infrastructure a command needs, for Validate.
type Mode int

// Modes of Validate.
const (
	// ModeEmbedded is `serve`: anything not configured is embedded.
	ModeEmbedded Mode = iota
	// ModeProduction is `api` and `worker`: Temporal and PostgreSQL must be
	// configured.
	ModeProduction
	// ModeDatabase is `migrate` and `keys`: only PostgreSQL is needed.
	ModeDatabase
	// ModeTemporal is `temporal`: a Temporal server of its own, which
	// needs none of trainyard's infrastructure.
	ModeTemporal
	// ModeInference is `infer`: PostgreSQL and S3, no Temporal.
	ModeInference
)

// Load reads the configuration from getenv (os.Getenv in main). Malformed
// values are reported together, each naming its variable.
func Load(getenv func(string) string) (Config, error) {
	e := env{get: getenv}
	c := Config{
		HTTPAddr:         e.str(EnvHTTPAddr, "127.0.0.1:8080"),
		DatabaseURL:      e.str(EnvDatabaseURL, ""),
		DataDir:          e.str(EnvDataDir, ".data"),
		DevAPIKey:        e.str(EnvDevAPIKey, ""),
		DefaultEntity:    e.str(EnvDefaultEntity, "local"),
		MaxBodyBytes:     e.int64(EnvMaxBodyBytes, 0),
		LogLevel:         e.level(EnvLogLevel, zapcore.InfoLevel),
		AllowFileURLs:    e.bool(EnvAllowFileURLs, false),
		FetchAllowLocal:  e.optBool(EnvFetchAllowLocal),
		DBTimeout:        e.duration(EnvDBTimeout, 0),
		JobDeadline:      e.duration(EnvJobDeadline, 0),
		HeartbeatTimeout: e.duration(EnvHeartbeatTimeout, 0),
		MaxWorkersPerJob: int(e.int64(EnvMaxWorkersPerJob, 0)),
		ServedWindow:     e.duration(EnvServedWindow, 0),
		MetricsAddr:      e.str(EnvMetricsAddr, "127.0.0.1:9090"),
		Temporal: Temporal{
			Address:      e.str(EnvTemporalAddress, ""),
			Namespace:    e.str(EnvTemporalNamespace, "default"),
			TaskQueue:    e.str(EnvTaskQueue, "trainyard-training"),
			FrontendAddr: e.str(EnvTemporalFrontendAddr, "127.0.0.1:7233"),
			UIAddr:       e.str(EnvTemporalUIAddr, "127.0.0.1:8233"),
			UIURL:        e.str(EnvTemporalUIURL, ""),
		},
		S3: S3{
			Endpoint:        e.str(EnvS3Endpoint, e.str(EnvTrainyardS3Endpoint, "")),
			Bucket:          e.str(EnvS3Bucket, "trainyard"),
			AccessKeyID:     e.str(EnvAWSAccessKeyID, ""),
			SecretAccessKey: e.str(EnvAWSSecretAccessKey, ""),
			Region:          e.str(EnvAWSRegion, "us-east-1"),
			EmbeddedAddr:    e.str(EnvS3Addr, "127.0.0.1:0"),
			ReadBuckets:     e.list(EnvS3ReadBuckets),
		},
		Chat: Chat{
			Concurrency:           int(e.int64(EnvChatConcurrency, 0)),
			PerAccountConcurrency: int(e.int64(EnvChatConcurrencyPerAccount, 0)),
			AdapterCacheBytes:     e.int64(EnvAdapterCacheBytes, 0),
			KVCacheBytes:          e.int64(EnvChatKVCacheBytes, 0),
			QueueLength:           int(e.int64(EnvChatQueueLength, 0)),
			QueueWait:             e.duration(EnvChatQueueWait, 0),
			BF16Dot:               e.optBool(EnvChatBF16Dot),
		},
		HTTP: HTTP{
			BodyTimeout:       e.duration(EnvHTTPBodyTimeout, 0),
			WriteTimeout:      e.duration(EnvHTTPWriteTimeout, 0),
			MaxRequestsPerKey: int(e.int64(EnvMaxRequestsPerKey, 0)),
		},
		Worker: Worker{
			TrainingConcurrency: int(e.int64(EnvTrainingConcurrency, 0)),
			FetchConcurrency:    int(e.int64(EnvFetchConcurrency, 0)),
			DownloadTimeout:     e.duration(EnvDownloadTimeout, 0),
			DownloadRetryWindow: e.duration(EnvDownloadRetryWindow, 0),
			MemoryLimit:         e.memoryLimit(EnvMemoryLimit),
			ChunkDuration:       e.duration(EnvTrainChunk, 0),
			BF16Train:           e.optBool(EnvTrainBF16),
		},
	}
	c.Inference = Inference{
		Mode:          e.str(EnvInference, InferenceLocal),
		Heartbeat:     e.duration(EnvInferHeartbeat, 0),
		AdvertiseAddr: e.str(EnvInferAdvertiseAddr, ""),
	}
	c.BaseModels, c.BaseModelDirs = e.baseModels(EnvBaseModels)
	c.ModelsDir = e.str(EnvModelsDir, "")
	c.S3.UsePathStyle = e.bool(EnvS3UsePathStyle, true)
	if err := errors.Join(e.errs...); err != nil {
		return c, err
	}
	return c, c.resolveDataDir()
}

// ModelsDirPath is the directory of model snapshots: ModelsDir, or models/
// under the data directory.
func (c *Config) ModelsDirPath() string {
	if c.ModelsDir != "" {
		if abs, err := filepath.Abs(c.ModelsDir); err == nil {
			return abs
		}
		return c.ModelsDir
	}
	return filepath.Join(c.DataDir, "models")
}

func (c *Config) resolveDataDir() error {
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", EnvDataDir, c.DataDir, err)
	}
	c.DataDir = abs
	return nil
}

// BindFlags registers flags that override the environment for the fields a
// user most often changes per run. Call Validate after parsing.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "API listen address ("+EnvHTTPAddr+")")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL ("+EnvDatabaseURL+")")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory of the embedded stack's state ("+EnvDataDir+")")
	fs.Func("log-level", "debug, info, warn or error ("+EnvLogLevel+")", func(s string) error {
		return c.LogLevel.UnmarshalText([]byte(s))
	})
}

// Validate checks the configuration for mode and makes DataDir absolute
// again (a flag may have changed it). Every problem is reported, each with
// the variable that fixes it.
func (c *Config) Validate(mode Mode) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := c.resolveDataDir(); err != nil {
		errs = append(errs, err)
	}
	if mode == ModeTemporal {
		if err := checkHostPort(c.Temporal.FrontendAddr); err != nil {
			add("%s=%q: %w", EnvTemporalFrontendAddr, c.Temporal.FrontendAddr, err)
		}
		if c.Temporal.Namespace == "" {
			add("%s must not be empty", EnvTemporalNamespace)
		}
		return errors.Join(errs...)
	}
	if mode != ModeDatabase {
		if err := checkHostPort(c.HTTPAddr); err != nil {
			add("%s=%q: %w", EnvHTTPAddr, c.HTTPAddr, err)
		}
		if c.MaxBodyBytes < 0 {
			add("%s must not be negative", EnvMaxBodyBytes)
		}
		if c.Temporal.Namespace == "" {
			add("%s must not be empty", EnvTemporalNamespace)
		}
		if c.Temporal.TaskQueue == "" {
			add("%s must not be empty", EnvTaskQueue)
		}
		if c.S3.Bucket == "" {
			add("%s must not be empty", EnvS3Bucket)
		}
		if c.Temporal.UIURL != "" {
			if err := checkWebURL(c.Temporal.UIURL); err != nil {
				add("%s=%q: %w", EnvTemporalUIURL, c.Temporal.UIURL, err)
			}
		}
		if (c.S3.AccessKeyID == "") != (c.S3.SecretAccessKey == "") {
			add("%s and %s must be set together", EnvAWSAccessKeyID, EnvAWSSecretAccessKey)
		}
	}
	if c.Inference.Mode != InferenceLocal && c.Inference.Mode != InferenceRemote {
		add("%s=%q: want %s or %s", EnvInference, c.Inference.Mode, InferenceLocal, InferenceRemote)
	}
	if c.Inference.AdvertiseAddr != "" {
		if err := checkHostPort(c.Inference.AdvertiseAddr); err != nil {
			add("%s=%q: %w", EnvInferAdvertiseAddr, c.Inference.AdvertiseAddr, err)
		}
	}
	switch mode {
	case ModeEmbedded:
		if c.Inference.Mode == InferenceRemote {
			add("%s=%s: serve runs chat completions in its own process (remote is for `trainyard api`)", EnvInference, InferenceRemote)
		}
		if c.Temporal.Address == "" {
			if err := checkHostPort(c.Temporal.FrontendAddr); err != nil {
				add("%s=%q: %w", EnvTemporalFrontendAddr, c.Temporal.FrontendAddr, err)
			}
			if c.Temporal.UIAddr != UIDisabled {
				if err := checkHostPort(c.Temporal.UIAddr); err != nil {
					add("%s=%q: %w (or %q to disable the UI)", EnvTemporalUIAddr, c.Temporal.UIAddr, err, UIDisabled)
				}
			}
		}
		if c.S3.Endpoint == "" {
			if err := checkHostPort(c.S3.EmbeddedAddr); err != nil {
				add("%s=%q: %w", EnvS3Addr, c.S3.EmbeddedAddr, err)
			}
		}
		if c.DatabaseURL == "" {
			add("%s is required (make run sets it with scripts/ensure-postgres.sh)", EnvDatabaseURL)
		}
		if c.DefaultEntity == "" {
			add("%s must not be empty", EnvDefaultEntity)
		}
	case ModeProduction:
		if c.Temporal.Address == "" {
			add("%s is required (host:port of the Temporal frontend)", EnvTemporalAddress)
		}
		if c.DatabaseURL == "" {
			add("%s is required", EnvDatabaseURL)
		}
	case ModeInference:
		if c.DatabaseURL == "" {
			add("%s is required", EnvDatabaseURL)
		}
	case ModeDatabase:
		if c.DatabaseURL == "" {
			add("%s is required (or run `make run` once in this checkout: serve records its database in %s)",
				EnvDatabaseURL, filepath.Join(c.DataDir, databaseURLFile))
		}
	}
	return errors.Join(errs...)
}
