package api

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// splitRules keep a split usable as a metric prefix ("val/reward") and
// storable as text (no control characters).
var splitRules = []validate.Rule[string]{
	validate.MinLen(1), validate.MaxLen(64), validate.Pattern(`^[^/\x00-\x1f\x7f]+$`),
}

// logResponse answers a log call. The document leaves the body open; this
// says what was stored and the metrics computed from it.
type logResponse struct {
	ID              string             `json:"id"`
	ModelID         string             `json:"model_id"`
	Split           string             `json:"split"`
	Step            int                `json:"step"`
	NumGroups       int                `json:"num_groups"`
	NumTrajectories int                `json:"num_trajectories"`
	Metrics         map[string]float64 `json:"metrics"`
}

// logTrajectories is POST /v1/preview/models/{model_id}/log: the whole body
// is validated first, then the trajectories are stored at the model's
// current step (its latest checkpoint, 0 for the base model) with the
// split's metrics, which are also merged into that checkpoint's metrics.
func (s *Server) logTrajectories(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	root, err := s.decodeBody(c, &errs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	body, _ := root.Model()
	split, _ := body.Field("split").String(splitRules...)
	groupsNode := body.Field("trajectory_groups")
	groups := parseTrajectoryGroups(groupsNode)
	var metrics map[string]float64
	if errs.Len() == 0 {
		metrics = trainyard.LogMetrics(split, groups.Groups)
		checkFiniteMetrics(groupsNode, metrics)
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
	step := 0
	latest, err := s.deps.Models.LatestCheckpoint(ctx, id)
	switch {
	case err == nil:
		step = latest.Step
	case trainyard.ErrorCode(err) != trainyard.ENOTFOUND:
		s.writeError(c, err)
		return
	}
	rec := &trainyard.LogRecord{
		ModelID:         id,
		Split:           split,
		Step:            step,
		Metrics:         metrics,
		NumGroups:       len(groups.Groups),
		NumTrajectories: groups.Count(),
	}
	rows := make([]trainyard.StoredTrajectory, 0, rec.NumTrajectories)
	for gi, g := range groups.Groups {
		for ti, t := range g.Trajectories {
			rows = append(rows, trainyard.StoredTrajectory{GroupIndex: gi, Index: ti, Reward: t.Reward, Body: groups.Raw[gi][ti]})
		}
	}
	if err := s.deps.Logs.SaveLog(ctx, rec, rows); err != nil {
		s.writeModelError(c, id, err)
		return
	}
	s.requestLog(c).Info("trajectories logged", zap.String("model_id", id), zap.String("log_id", rec.ID),
		zap.String("split", split), zap.Int("step", step), zap.Int("trajectories", rec.NumTrajectories))
	s.writeJSON(c, http.StatusOK, logResponse{
		ID: rec.ID, ModelID: id, Split: split, Step: step,
		NumGroups: rec.NumGroups, NumTrajectories: rec.NumTrajectories, Metrics: rec.Metrics,
	})
}

// checkFiniteMetrics fails node when a metric computed from finite inputs
// overflowed (rewards of ±1e308 have an infinite mean or spread): the
// client hears which one at ["body", "trajectory_groups"] instead of a
// storage error without a location.
func checkFiniteMetrics(node validate.Node, metrics map[string]float64) {
	if k, v, bad := trainyard.FirstNonFinite(metrics); bad {
		node.Invalid(fmt.Sprintf("%s is %v: rewards or metrics are too large to average; keep them well inside ±1e300", k, v))
	}
}
