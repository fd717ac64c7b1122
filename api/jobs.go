package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/internal/telemetry"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/workflows"
)

// JobWorkflows is what the training-job routes need from Temporal;
// workflows.Client implements it. Errors are trainyard errors (ENOTFOUND
// for no workflow, EUNAVAILABLE when Temporal or its workers do not answer).
type JobWorkflows interface {
	// StartJob starts the job's workflow; an existing one is a success.
	StartJob(ctx context.Context, job *trainyard.Job) error
	// CancelJob asks the job's workflow to cancel (or closes a job that
	// has none).
	CancelJob(ctx context.Context, jobID string) error
	// PauseJob and ResumeJob send the pause and resume updates; a
	// transition the workflow refuses is ECONFLICT with its reason.
	PauseJob(ctx context.Context, jobID string) error
	ResumeJob(ctx context.Context, jobID string) error
	// JobProgress queries the running workflow.
	JobProgress(ctx context.Context, jobID string) (*workflows.Progress, error)
	// DescribeJob reports the latest run of the job's workflow.
	DescribeJob(ctx context.Context, jobID string) (workflows.WorkflowState, error)
	// ReconcileJob closes a job whose workflow ended without closing it.
	ReconcileJob(ctx context.Context, job *trainyard.Job) (*trainyard.Job, error)
}

// JobsConfig configures the training-job routes.
type JobsConfig struct {
	// Data says which training_data_url forms are accepted: file:// only
	// in development, s3:// only from the buckets on its list.
	Data jobspec.DataPolicy
	// TemporalTimeout bounds the live look at a job's workflow when it is
	// read; past it the answer comes from PostgreSQL alone. Default 2s.
	TemporalTimeout time.Duration
	// StartTimeout bounds starting a job's workflow; past it the job is
	// accepted anyway and started later. Default 5s.
	StartTimeout time.Duration
	// ControlTimeout bounds a pause or resume (the update's round trip
	// through a worker); past it the answer is 503. Default 10s.
	ControlTimeout time.Duration
}

// createJobResponse is the document's TrainingJobResponse.
type createJobResponse struct {
	ID string `json:"id"`
}

// idempotencyKeyHeader makes a retried POST return the job of the first.
const idempotencyKeyHeader = "Idempotency-Key"

// createTrainingJob is POST /v1/preview/training-jobs (CreateTrainingJob):
// one RL step on the model from the trajectory groups.
func (s *Server) createTrainingJob(c *gin.Context) {
	r, ok := s.readJobRequest(c)
	if !ok {
		return
	}
	groupsNode := r.body.Field("trajectory_groups")
	before := r.errs.Len()
	groups := parseTrajectoryGroups(groupsNode)
	if r.errs.Len() == before && len(groups.Groups) == 0 {
		groupsNode.Fail("too_short", "List should have at least 1 item after validation, not 0",
			map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0})
	}
	experimental := rlExperimentalConfig(r.body.Field("experimental_config"))
	// What the worker reads is the validated value, not the bytes as sent:
	// lax-mode coercions (a reward of "0.75") are already applied, so
	// whatever passed here decodes there.
	input, err := json.Marshal(rlJobInput{ModelID: r.modelID, TrajectoryGroups: groups.Groups, ExperimentalConfig: experimental})
	if err != nil {
		s.writeError(c, fmt.Errorf("encode the job's input: %w", err))
		return
	}
	s.submitJob(c, r, trainyard.JobKindRL, jobspec.JobConfig{ExperimentalConfig: experimental}, input,
		func(ctx context.Context, m *trainyard.Model) error { return s.checkRLJob(ctx, groups, experimental, m) })
}

// rlJobInput is the stored input of an RL job.
type rlJobInput struct {
	ModelID            string                      `json:"model_id"`
	TrajectoryGroups   []trainyard.TrajectoryGroup `json:"trajectory_groups"`
	ExperimentalConfig json.RawMessage             `json:"experimental_config,omitempty"`
}

// createSFTTrainingJob is POST /v1/preview/sft-training-jobs
// (CreateSFTTrainingJob): epochs of SFT batches over JSONL conversations.
func (s *Server) createSFTTrainingJob(c *gin.Context) {
	r, ok := s.readJobRequest(c)
	if !ok {
		return
	}
	urlNode := r.body.Field("training_data_url")
	dataURL, ok := urlNode.String(validate.MinLen(1), validate.MaxLen(4096))
	if ok {
		if err := jobspec.CheckDataURL(dataURL, s.cfg.Jobs.Data); err != nil {
			urlNode.Invalid(err.Error())
		}
	}
	config, experimental := sftConfigs(r.body.Field("config"), r.body.Field("experimental_config"))
	s.submitJob(c, r, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: dataURL, Config: config, ExperimentalConfig: experimental},
		r.body.Raw(), func(ctx context.Context, m *trainyard.Model) error { return s.checkArtifact(ctx, dataURL, m) })
}

// jobRequest is what the two job-creating routes share: the optional
// Idempotency-Key header and the body with its model_id. Each route checks
// its own fields into errs before submitJob.
type jobRequest struct {
	errs    validate.Errors
	key     *string
	body    validate.Obj
	modelID string
}

// readJobRequest reads the header and the body of a job-creating POST and
// checks model_id. ok is false when it has answered already (a body that
// is not JSON).
func (s *Server) readJobRequest(c *gin.Context) (r *jobRequest, ok bool) {
	r = &jobRequest{}
	r.key = idempotencyKey(c, &r.errs)
	root, err := s.decodeBody(c, &r.errs)
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	r.body, _ = root.Model()
	r.modelID, _ = r.body.Field("model_id").UUID()
	return r, true
}

// submitJob answers r's validation errors, if any, or checks the request
// against its model (check), stores the job's input, creates its row and
// starts its workflow. The input is stored first, under a fresh id, so a job
// row always has its input. When Temporal is down the job stays QUEUED and
// is still accepted: the worker's reconciler (or a retried POST with the
// same Idempotency-Key) starts it later.
func (s *Server) submitJob(c *gin.Context, r *jobRequest, kind trainyard.JobKind, cfg jobspec.JobConfig, input []byte,
	check func(context.Context, *trainyard.Model) error) {
	if err := r.errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	modelID := r.modelID
	acct := accountOf(c)
	ctx := c.Request.Context()
	model, err := s.deps.Models.FindModel(ctx, acct.ID, modelID)
	if err != nil {
		s.writeModelError(c, modelID, err)
		return
	}
	if err := check(ctx, model); err != nil {
		s.writeError(c, err)
		return
	}
	id, err := uuid.NewV7()
	if err != nil {
		s.writeError(c, err)
		return
	}
	jobID := id.String()
	if err := s.deps.Blobs.PutJobInput(ctx, jobID, jobspec.InputFile, bytes.NewReader(input), int64(len(input))); err != nil {
		s.writeError(c, err)
		return
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		s.writeError(c, err)
		return
	}
	hash, err := requestHash(kind, input)
	if err != nil {
		s.writeError(c, err)
		return
	}
	job, created, err := s.deps.Jobs.CreateJob(ctx, &trainyard.Job{
		ID: jobID, AccountID: acct.ID, ModelID: modelID, Kind: kind, IdempotencyKey: r.key,
		Config: cfgJSON, WorkflowID: workflows.WorkflowID(jobID), RequestHash: hash,
	})
	if err != nil || !created {
		s.dropUnusedInput(c, jobID)
	}
	if err != nil {
		s.writeModelError(c, modelID, err)
		return
	}
	log := s.requestLog(c).With(zap.String("job_id", job.ID), zap.String("model_id", modelID), zap.String("kind", string(kind)))
	if !created && (job.ModelID != modelID || job.Kind != kind || (job.RequestHash != "" && job.RequestHash != hash)) {
		s.writeDetail(c, http.StatusConflict, "The Idempotency-Key was already used for a different request (job "+
			job.ID+"); send the same body to get that job again, or use a new key.")
		return
	}
	if !job.Status.Terminal() {
		sctx, cancel := context.WithTimeout(ctx, s.cfg.Jobs.StartTimeout)
		err := s.deps.Workflows.StartJob(sctx, job)
		cancel()
		if err != nil {
			// The job is stored; it starts once Temporal answers again.
			log.Warn("job accepted but its workflow did not start yet", zap.Error(err))
		}
	}
	if created {
		telemetry.JobsSubmitted.WithLabelValues(string(kind)).Inc()
		log.Info("training job created")
	} else {
		log.Info("training job returned for a repeated Idempotency-Key")
	}
	s.writeJSON(c, http.StatusOK, createJobResponse{ID: job.ID})
}

// dropUnusedInput deletes the input stored under jobID for a job that was
// not created (its Idempotency-Key named an existing job, or the row could
// not be written): nothing would ever delete it otherwise. Best effort: a
// failure leaves an orphan, logged.
func (s *Server) dropUnusedInput(c *gin.Context, jobID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), s.cfg.Jobs.StartTimeout)
	defer cancel()
	if err := s.deps.Blobs.DeleteJobFiles(ctx, jobID); err != nil {
		s.requestLog(c).Warn("could not delete the input of a job that was not created", zap.String("job_id", jobID), zap.Error(err))
	}
}

// idempotencyKey validates the optional Idempotency-Key header.
func idempotencyKey(c *gin.Context, errs *validate.Errors) *string {
	v := c.GetHeader(idempotencyKeyHeader)
	if v == "" {
		return nil
	}
	n := errs.At(v, "header", "idempotency-key")
	if s, ok := n.String(validate.MaxLen(255), validate.Pattern(`^[\x21-\x7e]+$`)); ok {
		return &s
	}
	return nil
}

// requestHash is the digest of a job request in canonical form: the same
// values in any key order, spacing or number spelling hash alike, so a
// retried POST matches its first attempt and a changed one does not.
func requestHash(kind trainyard.JobKind, input []byte) (string, error) {
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return "", fmt.Errorf("canonicalise the job request: %w", err)
	}
	canonical, err := json.Marshal(v) // object keys sorted, numbers in one spelling
	if err != nil {
		return "", fmt.Errorf("canonicalise the job request: %w", err)
	}
	sum := sha256.Sum256(append([]byte(string(kind)+"\n"), canonical...))
	return hex.EncodeToString(sum[:]), nil
}
