// Package api is trainyard's HTTP API: the W&B Training ("serverless RL")
// routes on Gin, answering with the bodies the hosted service's OpenAPI
// document describes, FastAPI-shaped errors included.
//
// A Server holds its dependencies as the store interfaces of the root
// package; handlers are its methods, one file per resource, and routes.go
// lists every route. Request bodies are decoded and validated by the
// api/validate package, so a bad body gets the same 422 the hosted service
// (FastAPI + pydantic) would send.
package api

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/inference"
	"github.com/trainyard/trainyard/retention"
	"github.com/trainyard/trainyard/serving"
)

// DefaultMaxBodyBytes is the request body limit when Config.MaxBodyBytes is
// zero.
const DefaultMaxBodyBytes = 64 << 20

// DefaultSystemCheckTimeout bounds each system-check probe when
// Config.SystemCheckTimeout is zero.
const DefaultSystemCheckTimeout = 5 * time.Second

// Config holds the API's settings. The zero value is usable.
type Config struct {
	// MaxBodyBytes limits request bodies; larger ones get 413. Default 64 MiB.
	MaxBodyBytes int64
	// BaseModels are the base_model names a model may be created from. When
	// empty, any name is accepted.
	BaseModels []string
	// SystemCheckTimeout bounds each probe of /v1/system-check. Default 5s.
	SystemCheckTimeout time.Duration
	// MaxCheckpointSteps bounds the steps list of one checkpoint deletion.
	// Default 10000.
	MaxCheckpointSteps int
	// BodyTimeout bounds reading one request body. Default
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// WriteTimeout bounds writing one response, or one event of a streamed
	// one. Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxRequestsPerKey caps one account's requests in flight; past it they
	// get 429 before their bodies are read. Default DefaultMaxRequestsPerKey.
	MaxRequestsPerKey int
	// EventPoll is how often an event stream looks for new events
	// (DefaultEventPoll); EventKeepAlive how long it stays quiet before a
	// keep-alive comment (DefaultEventKeepAlive).
	EventPoll, EventKeepAlive time.Duration
	// Jobs configures the training-job routes (jobs.go).
	Jobs JobsConfig
	// InferenceOnly serves only the probes, /metrics and chat completions:
	// the API of a `trainyard infer` process, which the main API forwards
	// chat requests to. Authentication, limits and answers are the same.
	InferenceOnly bool
	// Dashboard is what the web dashboard links to (dashboard.go).
	Dashboard DashboardConfig
}

// HealthCheck is one probe of /v1/system-check, e.g. "database" or a
// worker task queue. Check must honour ctx's deadline.
type HealthCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps are the services the API uses. Stores are required for the routes
// that use them; Logger defaults to a no-op logger.
type Deps struct {
	Accounts trainyard.AccountStore
	Models   trainyard.ModelStore
	Logs     trainyard.LogStore
	Jobs     trainyard.JobStore
	Events   trainyard.EventStore
	Blobs    trainyard.BlobStore
	Checks   []HealthCheck
	Logger   *zap.Logger
	// Chat serves chat completions in this process (chat*.go); the
	// routes exist only when it or ChatRouter is set.
	Chat *serving.Service
	// ChatRouter forwards chat completions to inference processes
	// (chat_remote.go) when Chat is nil.
	ChatRouter ChatRouter
	// Workflows runs training jobs on Temporal; the training-job routes
	// exist only when it is set.
	Workflows JobWorkflows
	// Files keeps uploaded training data; POST /v1/preview/files exists
	// only when it is set.
	Files FileStore
	// Dashboard serves the web dashboard's pages and assets at / (see
	// package dashboard); without it there is none.
	Dashboard http.Handler
	// Bases opens base models, so an RL job's trajectories are checked
	// as training will check them before the job is accepted; without it
	// only their shape is.
	Bases BaseModels
	// Retention applies a checkpoint policy when one is set; without it
	// the policy waits for the model's next job.
	Retention *retention.Pruner
}

// ChatRouter forwards a validated chat completion to an inference process
// and copies its answer to w; inference.Router implements it. It returns an
// error only when it wrote nothing.
type ChatRouter interface {
	Forward(ctx context.Context, w http.ResponseWriter, call inference.Call) error
}

// BaseModels opens base models by name; catalog.Catalog implements it.
type BaseModels interface {
	Base(ctx context.Context, name string) (*engine.Base, error)
}

// Server is the HTTP API. Create it with New and serve Handler.
type Server struct {
	cfg    Config
	deps   Deps
	log    *zap.Logger
	engine *gin.Engine
	// baseModels is Config.BaseModels as a set, nil when any name goes.
	baseModels map[string]bool
	inflight   *inflight
}

// New builds the server and its routes.
func New(cfg Config, deps Deps) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.SystemCheckTimeout <= 0 {
		cfg.SystemCheckTimeout = DefaultSystemCheckTimeout
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxRequestsPerKey <= 0 {
		cfg.MaxRequestsPerKey = DefaultMaxRequestsPerKey
	}
	if cfg.EventPoll <= 0 {
		cfg.EventPoll = DefaultEventPoll
	}
	if cfg.EventKeepAlive <= 0 {
		cfg.EventKeepAlive = DefaultEventKeepAlive
	}
	if cfg.MaxCheckpointSteps <= 0 {
		cfg.MaxCheckpointSteps = 10000
	}
	if cfg.Jobs.TemporalTimeout <= 0 {
		cfg.Jobs.TemporalTimeout = 2 * time.Second
	}
	if cfg.Jobs.StartTimeout <= 0 {
		cfg.Jobs.StartTimeout = 5 * time.Second
	}
	if cfg.Jobs.ControlTimeout <= 0 {
		cfg.Jobs.ControlTimeout = 10 * time.Second
	}
	log := deps.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{cfg: cfg, deps: deps, log: log, inflight: newInflight(cfg.MaxRequestsPerKey)}
	if len(cfg.BaseModels) > 0 {
		s.baseModels = make(map[string]bool, len(cfg.BaseModels))
		for _, b := range cfg.BaseModels {
			s.baseModels[b] = true
		}
	}
	s.engine = s.newEngine()
	s.routes()
	return s
}

// Handler returns the http.Handler serving the API.
func (s *Server) Handler() http.Handler { return s.engine }

func (s *Server) newEngine() *gin.Engine {
	// Gin's debug mode prints every route on start-up; only an explicit
	// GIN_MODE turns it back on.
	if os.Getenv(gin.EnvGinMode) == "" {
		gin.SetMode(gin.ReleaseMode)
	}
	e := gin.New()
	// Unknown methods on known paths are 405 like Starlette, and a path
	// that differs by a trailing slash is simply not found rather than
	// redirected, so every answer is JSON.
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	// The client address comes from the connection, never from headers a
	// client can forge.
	_ = e.SetTrustedProxies(nil)
	e.Use(s.requestID, s.bodyDeadline, s.accessLog, s.recoverPanic)
	e.NoRoute(func(c *gin.Context) { s.writeDetail(c, http.StatusNotFound, "Not Found") })
	e.NoMethod(func(c *gin.Context) { s.writeDetail(c, http.StatusMethodNotAllowed, "Method Not Allowed") })
	return e
}
