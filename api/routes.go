package api

// routes registers every route of the API. Later resources (training jobs,
// chat completions) add their lines to the authenticated group here and
// their handlers in a file of their own.
func (s *Server) routes() {
	v1 := s.engine.Group("/v1")

	// Probes answer without a key.
	v1.GET("/health", s.health)
	v1.GET("/system-check", s.systemCheck)

	authed := v1.Group("", s.authenticate)

	// Models and their checkpoints.
	authed.POST("/preview/models", s.createModel)
	authed.DELETE("/preview/models/:model_id", s.deleteModel)
	authed.GET("/preview/models/:model_id/checkpoints", s.listCheckpoints)
	authed.DELETE("/preview/models/:model_id/checkpoints", s.deleteCheckpoints)
	authed.POST("/preview/models/:model_id/log", s.logTrajectories)
}
