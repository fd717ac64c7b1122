package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// A model's checkpoint policy (trainyard's own): set with the model
// (checkpoint_policy in POST /v1/preview/models) or later with
// PUT /v1/preview/models/{id}/checkpoint-policy, removed with DELETE, read
// with GET. Retention applies it after every job of the model and, when the
// policy is set, at once.

// parsePolicy reads a checkpoint policy: {"keep_last": N (default 1),
// "keep_best_by": {"metric": "val/reward", "direction": "max"|"min"
// (default "max")} or null}. nil when n is absent, null or invalid (the
// errors are recorded at n).
func parsePolicy(n validate.Node) *trainyard.CheckpointPolicy {
	obj, ok := n.Model()
	if !ok {
		return nil
	}
	p := &trainyard.CheckpointPolicy{KeepLast: 1}
	if v, ok := obj.Field("keep_last").Optional().Nullable().Strict().Int(validate.Ge(1), validate.Le(trainyard.MaxKeepLast)); ok {
		p.KeepLast = v
	}
	if best, ok := obj.Field("keep_best_by").Optional().Nullable().Model(); ok {
		metric, _ := best.Field("metric").String(validate.MinLen(1), validate.MaxLen(256))
		dir := trainyard.DirectionMax
		if d, ok := best.Field("direction").Optional().Enum(trainyard.DirectionMax, trainyard.DirectionMin); ok {
			dir = d
		}
		p.KeepBestBy = &trainyard.MetricGoal{Metric: metric, Direction: dir}
	}
	return p
}

// policyResponse is the answer of the checkpoint-policy routes.
type policyResponse struct {
	ModelID          string                      `json:"model_id"`
	CheckpointPolicy *trainyard.CheckpointPolicy `json:"checkpoint_policy"`
	// DeletedSteps are the checkpoints the policy removed when it was set.
	DeletedSteps []int `json:"deleted_steps"`
}

// getCheckpointPolicy is GET /v1/preview/models/{model_id}/checkpoint-policy.
func (s *Server) getCheckpointPolicy(c *gin.Context) {
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	m, err := s.deps.Models.FindModel(c.Request.Context(), accountOf(c).ID, id)
	if err != nil {
		s.writeModelError(c, id, err)
		return
	}
	s.writeJSON(c, http.StatusOK, policyResponse{ModelID: m.ID, CheckpointPolicy: m.CheckpointPolicy, DeletedSteps: []int{}})
}

// putCheckpointPolicy is PUT /v1/preview/models/{model_id}/checkpoint-policy
// with the policy as the body: it replaces the model's policy and applies it
// at once; the answer lists the steps deleted.
func (s *Server) putCheckpointPolicy(c *gin.Context) {
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	root, err := s.decodeBody(c, &errs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	p := parsePolicy(root)
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	s.setPolicy(c, id, p)
}

// deleteCheckpointPolicy is DELETE /v1/preview/models/{model_id}/checkpoint-policy:
// the model keeps every checkpoint from now on.
func (s *Server) deleteCheckpointPolicy(c *gin.Context) {
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	s.setPolicy(c, id, nil)
}

// setPolicy stores p as the model's policy, applies it and answers.
func (s *Server) setPolicy(c *gin.Context, id string, p *trainyard.CheckpointPolicy) {
	ctx := c.Request.Context()
	m, err := s.deps.Models.SetCheckpointPolicy(ctx, accountOf(c).ID, id, p)
	if err != nil {
		s.writeModelError(c, id, err)
		return
	}
	res := policyResponse{ModelID: m.ID, CheckpointPolicy: m.CheckpointPolicy, DeletedSteps: []int{}}
	log := s.requestLog(c).With(zap.String("model_id", m.ID))
	if p != nil && s.deps.Retention != nil {
		// The policy is stored; the deletions finish even if the client
		// hangs up, and the next job's retention redoes what fails here.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		out, err := s.deps.Retention.Apply(actx, m)
		if err != nil {
			s.writeError(c, err)
			return
		}
		res.DeletedSteps = append(res.DeletedSteps, out.Deleted...)
	}
	log.Info("checkpoint policy set", zap.Any("policy", m.CheckpointPolicy), zap.Ints("deleted_steps", res.DeletedSteps))
	s.writeJSON(c, http.StatusOK, res)
}
