package api

import (
	"github.com/gin-gonic/gin"

	"github.com/trainyard/trainyard/internal/telemetry"
)

// routes registers every route of the API. Later resources (training jobs,
// chat completions) add their lines to the authenticated group here and
// their handlers in a file of their own.
func (s *Server) routes() {
	// Prometheus scrapes without a key; the metrics name no account.
	s.engine.GET("/metrics", gin.WrapH(telemetry.Handler()))

	v1 := s.engine.Group("/v1")

	// Probes answer without a key.
	v1.GET("/health", s.health)
	v1.HEAD("/health", s.health) // for load balancers that probe with HEAD
	v1.GET("/system-check", s.systemCheck)

	// The web dashboard (dashboard.go) is a client of the routes below.
	s.dashboardRoutes()

	authed := v1.Group("", s.authenticate, s.limitInflight)

	// Chat completions (chat*.go): sampled through serving here, or
	// forwarded to an inference process; no workflow either way.
	switch {
	case s.deps.Chat != nil:
		authed.POST("/chat/completions", s.chatCompletions)
		authed.POST("/chat/completions/", s.chatCompletions)
	case s.deps.ChatRouter != nil:
		authed.POST("/chat/completions", s.chatCompletionsRemote)
		authed.POST("/chat/completions/", s.chatCompletionsRemote)
	}
	if s.cfg.InferenceOnly {
		return
	}

	// Models and their checkpoints.
	authed.POST("/preview/models", s.createModel)
	authed.GET("/preview/models", s.listModels)
	authed.GET("/preview/models/:model_id", s.getModel)
	authed.DELETE("/preview/models/:model_id", s.deleteModel)
	authed.GET("/preview/models/:model_id/checkpoints", s.listCheckpoints)
	authed.DELETE("/preview/models/:model_id/checkpoints", s.deleteCheckpoints)
	authed.POST("/preview/models/:model_id/log", s.logTrajectories)
	authed.GET("/preview/models/:model_id/checkpoint-policy", s.getCheckpointPolicy)
	authed.PUT("/preview/models/:model_id/checkpoint-policy", s.putCheckpointPolicy)
	authed.DELETE("/preview/models/:model_id/checkpoint-policy", s.deleteCheckpointPolicy)

	// Training jobs (jobs*.go) run on Temporal.
	if s.deps.Workflows != nil {
		authed.POST("/preview/training-jobs", s.createTrainingJob)
		authed.POST("/preview/sft-training-jobs", s.createSFTTrainingJob)
		authed.GET("/preview/training-jobs", s.listTrainingJobs)
		authed.GET("/preview/training-jobs/:training_job_id", s.getTrainingJob)
		authed.GET("/preview/training-jobs/:training_job_id/events", s.listTrainingJobEvents)
		authed.POST("/preview/training-jobs/:training_job_id/cancel", s.cancelTrainingJob)
		authed.POST("/preview/training-jobs/:training_job_id/retry", s.retryTrainingJob)
		authed.POST("/preview/training-jobs/:training_job_id/pause", s.pauseTrainingJob)
		authed.POST("/preview/training-jobs/:training_job_id/resume", s.resumeTrainingJob)
	}
	if s.deps.Files != nil {
		authed.POST("/preview/files", s.uploadFile)
	}
}
