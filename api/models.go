package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// modelResponse is the document's ModelResponse, plus the model's
// checkpoint policy (trainyard's own; left out when it keeps every
// checkpoint, so such a model answers exactly as the document shows).
type modelResponse struct {
	ID               string                      `json:"id"`
	Entity           string                      `json:"entity"`
	Project          string                      `json:"project"`
	Name             string                      `json:"name"`
	BaseModel        string                      `json:"base_model"`
	RunID            *string                     `json:"run_id"`
	CheckpointPolicy *trainyard.CheckpointPolicy `json:"checkpoint_policy,omitempty"`
}

func newModelResponse(m *trainyard.Model) modelResponse {
	return modelResponse{ID: m.ID, Entity: m.Entity, Project: m.Project, Name: m.Name, BaseModel: m.BaseModel, RunID: m.RunID,
		CheckpointPolicy: m.CheckpointPolicy}
}

// deleteModelResponse is the document's DeleteModelResponse.
type deleteModelResponse struct {
	ModelID            string `json:"model_id"`
	DeletedCheckpoints int    `json:"deleted_checkpoints"`
	DeletedRun         bool   `json:"deleted_run"`
}

// Names become part of wandb-artifact:///ENTITY/PROJECT/NAME model names,
// so they follow W&B's rules: artifact names and entities are letters,
// digits, '-', '_' and '.'; project names exclude / \ # ? % : and blanks.
// "." and ".." are refused too: a name is a path segment of model and
// artifact URLs and of the keys of uploaded files.
var (
	artifactNameRules = []validate.Rule[string]{
		validate.MinLen(1), validate.MaxLen(128), validate.Pattern(`^[A-Za-z0-9._-]+$`), notDotSegment,
	}
	projectNameRules = []validate.Rule[string]{
		validate.MinLen(1), validate.MaxLen(128), validate.Pattern(`^[^/\\#?%:\s\x00-\x1f\x7f]+$`), notDotSegment,
	}
)

// notDotSegment refuses the names "." and "..".
func notDotSegment(n validate.Node, s string) bool {
	if s == "." || s == ".." {
		n.Invalid("a name may not be '.' or '..'")
		return false
	}
	return true
}

// cleanupTimeout bounds the removal of objects after their rows are gone;
// it runs even if the client has hung up, so nothing is orphaned by a
// dropped connection.
const cleanupTimeout = time.Minute

// createModel is POST /v1/preview/models (ModelCreate -> ModelResponse).
// Besides the document's fields it takes from_checkpoint (fork a checkpoint
// of one of the account's models, models_fork.go) and checkpoint_policy
// (retention, models_policy.go), both trainyard's own and optional.
func (s *Server) createModel(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	root, err := s.decodeBody(c, &errs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	body, _ := root.Model()
	entity, _ := body.Field("entity").Optional().Nullable().String(artifactNameRules...)
	project, _ := body.Field("project").String(projectNameRules...)
	name, _ := body.Field("name").String(artifactNameRules...)
	baseNode := body.Field("base_model")
	baseModel, ok := baseNode.String(validate.MinLen(1), validate.MaxLen(256), validate.Pattern(`^[^\x00-\x1f\x7f]+$`))
	if ok && s.baseModels != nil && !s.baseModels[baseModel] {
		exp := validate.Expected(s.cfg.BaseModels)
		baseNode.Fail("literal_error", "Input should be "+exp, map[string]any{"expected": exp})
	}
	returnExisting, _ := body.Field("return_existing").Optional().Bool()
	from, fromRef, fork := parseFork(body.Field("from_checkpoint").Optional().Nullable())
	policy := parsePolicy(body.Field("checkpoint_policy").Optional().Nullable())
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}

	// A null or absent entity means the key's own; any other entity is not
	// found, whether or not it exists, so entities cannot be probed.
	if entity == "" {
		entity = acct.Entity
	} else if entity != acct.Entity {
		s.writeDetail(c, http.StatusNotFound, "Entity '"+entity+"' not found.")
		return
	}
	ctx := c.Request.Context()
	if returnExisting {
		m, err := s.deps.Models.FindModelByName(ctx, acct.ID, entity, project, name)
		if err == nil {
			s.writeJSON(c, http.StatusOK, newModelResponse(m))
			return
		}
		if trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
			s.writeError(c, err)
			return
		}
	}
	m := &trainyard.Model{AccountID: acct.ID, Entity: entity, Project: project, Name: name, BaseModel: baseModel,
		CheckpointPolicy: policy}
	if fork {
		err = s.forkModel(ctx, m, from, fromRef, baseNode)
	} else {
		err = s.deps.Models.CreateModel(ctx, m)
	}
	if trainyard.ErrorCode(err) == trainyard.ECONFLICT {
		if !returnExisting {
			s.writeDetail(c, http.StatusConflict, "Model '"+entity+"/"+project+"/"+name+"' already exists.")
			return
		}
		// Another request created it between our lookup and insert.
		m, err = s.deps.Models.FindModelByName(ctx, acct.ID, entity, project, name)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.requestLog(c).Info("model created", zap.String("model_id", m.ID), zap.String("base_model", m.BaseModel),
		zap.String("forked_from", m.ForkedFrom))
	s.writeJSON(c, http.StatusOK, newModelResponse(m))
}

// deleteModel is DELETE /v1/preview/models/{model_id}: the model's running
// jobs are asked to cancel, its rows go in one transaction (checkpoints,
// logs, jobs and events by cascade), then its objects and its jobs' inputs.
func (s *Server) deleteModel(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	jobs, err := s.modelJobs(ctx, acct.ID, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	log := s.requestLog(c).With(zap.String("model_id", id))
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for _, j := range jobs {
		if !j.Status.Terminal() && s.deps.Workflows != nil {
			// Best effort: the rows go either way, and a workflow that
			// outlives its job finds nothing to write to.
			if err := s.deps.Workflows.CancelJob(cleanup, j.ID); err != nil {
				log.Warn("cancel the job of a deleted model", zap.String("job_id", j.ID), zap.Error(err))
			}
		}
	}
	deleted, err := s.deps.Models.DeleteModel(ctx, acct.ID, id)
	if err != nil {
		s.writeModelError(c, id, err)
		return
	}
	// The model is gone for every reader now; objects left behind by a
	// failure below are only wasted storage, so they are logged, not fatal.
	if err := s.deps.Blobs.DeleteModelFiles(cleanup, id); err != nil {
		log.Error("model deleted but its objects remain", zap.Error(err))
	}
	for _, j := range jobs {
		if err := s.deps.Blobs.DeleteJobFiles(cleanup, j.ID); err != nil {
			log.Error("model deleted but a job's objects remain", zap.String("job_id", j.ID), zap.Error(err))
		}
	}
	log.Info("model deleted", zap.Int("checkpoints", len(deleted)), zap.Int("jobs", len(jobs)))
	s.writeJSON(c, http.StatusOK, deleteModelResponse{ModelID: id, DeletedCheckpoints: len(deleted), DeletedRun: false})
}

// modelJobs returns every job of the account's model (none for a model
// that is not the account's).
func (s *Server) modelJobs(ctx context.Context, accountID, modelID string) ([]*trainyard.Job, error) {
	if s.deps.Jobs == nil {
		return nil, nil
	}
	var all []*trainyard.Job
	opts := trainyard.ListOptions{Limit: trainyard.MaxPageLimit, Order: trainyard.OrderAsc}
	for {
		page, err := s.deps.Jobs.ListJobs(ctx, accountID, modelID, opts)
		if err != nil {
			return nil, fmt.Errorf("list jobs of model %s: %w", modelID, err)
		}
		all = append(all, page.Items...)
		if !page.HasMore || len(page.Items) == 0 {
			return all, nil
		}
		opts.After = page.Items[len(page.Items)-1].ID
	}
}

// writeModelError answers a store error about model id, with one message
// for "missing" and "another account's" so ids do not leak.
func (s *Server) writeModelError(c *gin.Context, id string, err error) {
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		s.writeDetail(c, http.StatusNotFound, "Model '"+id+"' not found.")
		return
	}
	s.writeError(c, err)
}
