package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// modelResponse is the document's ModelResponse.
type modelResponse struct {
	ID        string  `json:"id"`
	Entity    string  `json:"entity"`
	Project   string  `json:"project"`
	Name      string  `json:"name"`
	BaseModel string  `json:"base_model"`
	RunID     *string `json:"run_id"`
}

func newModelResponse(m *trainyard.Model) modelResponse {
	return modelResponse{ID: m.ID, Entity: m.Entity, Project: m.Project, Name: m.Name, BaseModel: m.BaseModel, RunID: m.RunID}
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
var (
	artifactNameRules = []validate.Rule[string]{
		validate.MinLen(1), validate.MaxLen(128), validate.Pattern(`^[A-Za-z0-9._-]+$`),
	}
	projectNameRules = []validate.Rule[string]{
		validate.MinLen(1), validate.MaxLen(128), validate.Pattern(`^[^/\\#?%:\s\x00-\x1f\x7f]+$`),
	}
)

// cleanupTimeout bounds the removal of objects after their rows are gone;
// it runs even if the client has hung up, so nothing is orphaned by a
// dropped connection.
const cleanupTimeout = time.Minute

// createModel is POST /v1/preview/models (ModelCreate -> ModelResponse).
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
	m := &trainyard.Model{AccountID: acct.ID, Entity: entity, Project: project, Name: name, BaseModel: baseModel}
	err = s.deps.Models.CreateModel(ctx, m)
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
	s.requestLog(c).Info("model created", zap.String("model_id", m.ID), zap.String("base_model", m.BaseModel))
	s.writeJSON(c, http.StatusOK, newModelResponse(m))
}

// deleteModel is DELETE /v1/preview/models/{model_id}: the rows go in one
// transaction (checkpoints, logs, jobs, events by cascade), then the
// model's objects.
func (s *Server) deleteModel(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	id := pathUUID(c, &errs, "model_id")
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	deleted, err := s.deps.Models.DeleteModel(c.Request.Context(), acct.ID, id)
	if err != nil {
		s.writeModelError(c, id, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), cleanupTimeout)
	defer cancel()
	if err := s.deps.Blobs.DeleteModelFiles(ctx, id); err != nil {
		// The model is gone for every reader; only storage is left over.
		s.requestLog(c).Error("model deleted but its objects remain", zap.String("model_id", id), zap.Error(err))
	}
	s.requestLog(c).Info("model deleted", zap.String("model_id", id), zap.Int("checkpoints", len(deleted)))
	s.writeJSON(c, http.StatusOK, deleteModelResponse{ModelID: id, DeletedCheckpoints: len(deleted), DeletedRun: false})
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
