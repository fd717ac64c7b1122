package api

import (
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// DashboardConfig is what the web dashboard must know of the deployment to
// link out of it; GET /v1/dashboard-config hands it to the browser.
type DashboardConfig struct {
	// TemporalUIURL is the Temporal Web UI's base URL, e.g.
	// http://127.0.0.1:8233; empty when there is none to link to.
	TemporalUIURL string
	// TemporalNamespace is the namespace the job workflows run in.
	TemporalNamespace string
}

// dashboardConfigResponse is GET /v1/dashboard-config.
type dashboardConfigResponse struct {
	TemporalUIURL     *string `json:"temporal_ui_url"`
	TemporalNamespace string  `json:"temporal_namespace"`
	// JobActions are the POST /v1/preview/training-jobs/{id}/ACTION routes
	// this server has (cancel, retry, pause, ...), so the dashboard offers
	// the buttons that work here and no others.
	JobActions []string `json:"job_actions"`
}

// dashboardPages are the paths of the dashboard's pages; each serves the
// same document, whose script renders the page the path names, so a
// reloaded or shared link opens where it pointed. Assets are under /assets/.
var dashboardPages = []string{"/", "/models", "/models/:model_id", "/jobs", "/jobs/:training_job_id", "/assets/*file"}

// dashboardRoutes serves the dashboard (when Deps.Dashboard is set) and its
// configuration, which needs no key: it names no account's data.
func (s *Server) dashboardRoutes() {
	s.engine.GET("/v1/dashboard-config", s.dashboardConfig)
	if s.deps.Dashboard == nil {
		return
	}
	h := gin.WrapH(s.deps.Dashboard)
	for _, p := range dashboardPages {
		s.engine.GET(p, h)
		s.engine.HEAD(p, h)
	}
}

// dashboardConfig is GET /v1/dashboard-config.
func (s *Server) dashboardConfig(c *gin.Context) {
	r := dashboardConfigResponse{TemporalNamespace: s.cfg.Dashboard.TemporalNamespace, JobActions: s.jobActions()}
	if u := s.cfg.Dashboard.TemporalUIURL; u != "" {
		r.TemporalUIURL = &u
	}
	s.writeJSON(c, http.StatusOK, r)
}

// jobActions lists the actions a training job has routes for, read from
// the router itself so that a route added later shows up in the dashboard
// without touching this file.
func (s *Server) jobActions() []string {
	// POST /v1/preview/training-jobs/:id/ACTION, whatever the id is called.
	const prefix = "/v1/preview/training-jobs/:"
	actions := []string{}
	for _, r := range s.engine.Routes() {
		if r.Method == http.MethodPost && strings.HasPrefix(r.Path, prefix) && strings.Count(r.Path, "/") == 5 {
			if a := path.Base(r.Path); !slices.Contains(actions, a) {
				actions = append(actions, a)
			}
		}
	}
	slices.Sort(actions)
	return actions
}
