package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// checkpointResponse is the document's CheckpointResponse.
type checkpointResponse struct {
	ID      string             `json:"id"`
	Step    int                `json:"step"`
	Metrics map[string]float64 `json:"metrics"`
}

// listResponse is the document's PaginatedResponse[T].
type listResponse[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

// newListResponse builds a page; id extracts an item's id for the cursors.
func newListResponse[T any](items []T, hasMore bool, id func(T) string) listResponse[T] {
	r := listResponse[T]{Object: "list", Data: items, HasMore: hasMore}
	if r.Data == nil {
		r.Data = []T{}
	}
	if len(items) > 0 {
		r.FirstID, r.LastID = id(items[0]), id(items[len(items)-1])
	}
	return r
}

// pageQuery validates the after/limit(/order) query parameters of a list
// route with the document's defaults (limit 20 in 1..100, order asc).
// withOrder is false for lists that have no order parameter.
func pageQuery(c *gin.Context, errs *validate.Errors, withOrder bool) trainyard.ListOptions {
	q := c.Request.URL.Query()
	opts := trainyard.ListOptions{Limit: trainyard.DefaultPageLimit, Order: trainyard.OrderAsc}
	// An empty cursor is no cursor.
	if vs := q["after"]; len(vs) > 0 && vs[len(vs)-1] != "" {
		opts.After, _ = errs.Query(q, "after").UUID()
	}
	if v, ok := errs.Query(q, "limit").Optional().Int(validate.Ge(1), validate.Le(trainyard.MaxPageLimit)); ok {
		opts.Limit = v
	}
	if withOrder {
		if v, ok := errs.Query(q, "order").Optional().Enum(trainyard.OrderAsc, trainyard.OrderDesc); ok {
			opts.Order = v
		}
	}
	return opts
}

// writeListError answers a list store error; an `after` cursor the store
// does not know (EINVALID) is reported at ["query","after"].
func (s *Server) writeListError(c *gin.Context, opts trainyard.ListOptions, err error) {
	if trainyard.ErrorCode(err) == trainyard.EINVALID && opts.After != "" {
		var errs validate.Errors
		errs.At(opts.After, "query", "after").Invalid(trainyard.ErrorMessage(err))
		s.writeError(c, errs.Err())
		return
	}
	s.writeError(c, err)
}

// listCheckpoints is GET /v1/preview/models/{model_id}/checkpoints.
func (s *Server) listCheckpoints(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	opts := pageQuery(c, &errs, true)
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	if _, err := s.deps.Models.FindModel(ctx, acct.ID, id); err != nil {
		s.writeModelError(c, id, err)
		return
	}
	page, err := s.deps.Models.ListCheckpoints(ctx, id, opts)
	if err != nil {
		s.writeListError(c, opts, err)
		return
	}
	items := make([]checkpointResponse, len(page.Items))
	for i, cp := range page.Items {
		items[i] = checkpointResponse{ID: cp.ID, Step: cp.Step, Metrics: cp.Metrics}
		if items[i].Metrics == nil {
			items[i].Metrics = map[string]float64{}
		}
	}
	s.writeJSON(c, http.StatusOK, newListResponse(items, page.HasMore, func(r checkpointResponse) string { return r.ID }))
}

// deleteCheckpointsResponse is the document's DeleteCheckpointsResponse.
type deleteCheckpointsResponse struct {
	DeletedCount  int   `json:"deleted_count"`
	NotFoundSteps []int `json:"not_found_steps"`
}

// deleteCheckpoints is DELETE /v1/preview/models/{model_id}/checkpoints
// with a {"steps": [...]} body: the rows go, then each one's objects.
func (s *Server) deleteCheckpoints(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	root, err := s.decodeBody(c, &errs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	body, _ := root.Model()
	items, _ := body.Field("steps").List(validate.MaxItems(s.cfg.MaxCheckpointSteps))
	steps := make([]int, 0, len(items))
	for _, it := range items {
		if v, ok := it.Int(); ok {
			steps = append(steps, v)
		}
	}
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	if _, err := s.deps.Models.FindModel(ctx, acct.ID, id); err != nil {
		s.writeModelError(c, id, err)
		return
	}
	deleted, notFound, err := s.deps.Models.DeleteCheckpoints(ctx, id, steps)
	if err != nil {
		s.writeModelError(c, id, err)
		return
	}
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for _, cp := range deleted {
		if err := s.deps.Blobs.DeleteCheckpointFiles(cleanup, id, cp.Step); err != nil {
			s.requestLog(c).Error("checkpoint deleted but its objects remain",
				zap.String("model_id", id), zap.Int("step", cp.Step), zap.Error(err))
		}
	}
	if notFound == nil {
		notFound = []int{}
	}
	s.writeJSON(c, http.StatusOK, deleteCheckpointsResponse{DeletedCount: len(deleted), NotFoundSteps: notFound})
}
