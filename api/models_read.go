package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// modelDetailResponse is a model as trainyard's own read routes return it:
// the document's ModelResponse, when it was created, and its newest
// checkpoint, so a list of models shows how far each one got without a
// request per model.
type modelDetailResponse struct {
	modelResponse
	CreatedAt        time.Time                 `json:"created_at"`
	LatestCheckpoint *latestCheckpointResponse `json:"latest_checkpoint"`
}

// latestCheckpointResponse is a model's newest checkpoint.
type latestCheckpointResponse struct {
	ID        string             `json:"id"`
	Step      int                `json:"step"`
	Metrics   map[string]float64 `json:"metrics"`
	CreatedAt time.Time          `json:"created_at"`
}

func newModelDetailResponse(s *trainyard.ModelSummary) modelDetailResponse {
	r := modelDetailResponse{modelResponse: newModelResponse(&s.Model), CreatedAt: s.CreatedAt}
	if cp := s.Latest; cp != nil {
		r.LatestCheckpoint = &latestCheckpointResponse{ID: cp.ID, Step: cp.Step, Metrics: cp.Metrics, CreatedAt: cp.CreatedAt}
		if r.LatestCheckpoint.Metrics == nil {
			r.LatestCheckpoint.Metrics = map[string]float64{}
		}
	}
	return r
}

// listModels is GET /v1/preview/models?after&limit&order (trainyard's own):
// the account's models, newest first unless order=asc.
func (s *Server) listModels(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	opts := pageQuery(c, &errs, true)
	if _, given := c.Request.URL.Query()["order"]; !given {
		opts.Order = trainyard.OrderDesc
	}
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	page, err := s.deps.Models.ListModels(c.Request.Context(), acct.ID, opts)
	if err != nil {
		s.writeListError(c, opts, err)
		return
	}
	items := make([]modelDetailResponse, len(page.Items))
	for i, m := range page.Items {
		items[i] = newModelDetailResponse(m)
	}
	s.writeJSON(c, http.StatusOK, newListResponse(items, page.HasMore, func(m modelDetailResponse) string { return m.ID }))
}

// getModel is GET /v1/preview/models/{model_id} (trainyard's own).
func (s *Server) getModel(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	m, err := s.deps.Models.FindModelSummary(c.Request.Context(), acct.ID, id)
	if err != nil {
		s.writeModelError(c, id, err)
		return
	}
	s.writeJSON(c, http.StatusOK, newModelDetailResponse(m))
}
