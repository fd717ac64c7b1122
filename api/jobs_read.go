package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/workflows"
)

// jobResponse is a training job as GET returns it. The document promises
// only id; the rest is what users of long jobs need, including the request's
// settings, so a job can be resubmitted from what GET shows.
type jobResponse struct {
	ID             string             `json:"id"`
	ModelID        string             `json:"model_id"`
	Type           string             `json:"type"`
	Status         string             `json:"status"`
	Phase          string             `json:"phase"`
	CreatedAt      time.Time          `json:"created_at"`
	StartedAt      *time.Time         `json:"started_at"`
	FinishedAt     *time.Time         `json:"finished_at"`
	CurrentStep    int                `json:"current_step"`
	TotalSteps     int                `json:"total_steps"`
	Metrics        map[string]float64 `json:"metrics"`
	Error          *string            `json:"error"`
	LastError      *lastErrorResponse `json:"last_error"`
	CheckpointStep *int               `json:"checkpoint_step"`
	// Workers is how many workers the last step ran on: more than one when
	// the job's steps are spread over the workers holding its base model
	// (TRAINYARD_MAX_WORKERS_PER_JOB); 0 before the first step.
	Workers    int     `json:"workers"`
	WorkflowID string  `json:"workflow_id"`
	RunID      *string `json:"run_id"`
	// RetryOf and RetriedBy link a retried job and its retry.
	RetryOf   *string `json:"retry_of"`
	RetriedBy *string `json:"retried_by"`
	// The request's settings: the SFT data URL and config, and the
	// experimental_config of either kind, as submitted.
	TrainingDataURL    *string         `json:"training_data_url"`
	Config             json.RawMessage `json:"config"`
	ExperimentalConfig json.RawMessage `json:"experimental_config"`
}

// lastErrorResponse is why a job that is not finished is not progressing:
// a step that failed and will be tried again.
type lastErrorResponse struct {
	Message       string     `json:"message"`
	Activity      string     `json:"activity"`
	Attempt       int        `json:"attempt"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
}

// Phases a job response can show besides the workflow's own (see
// workflows.Phase*): one is always given.
const (
	phaseWaiting  = "waiting"
	phaseTraining = "training"
	phaseDone     = "done"
)

// live is what a job's workflow adds to the stored job.
type live struct {
	phase    string
	retrying *workflows.RetryingActivity
}

func newJobResponse(j *trainyard.Job, l live) jobResponse {
	r := jobResponse{
		ID: j.ID, ModelID: j.ModelID, Type: string(j.Kind), Status: string(j.Status), Phase: l.phase,
		CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		CurrentStep: j.CurrentStep, TotalSteps: j.TotalSteps, Metrics: j.LatestMetrics,
		Error: j.Error, CheckpointStep: j.Checkpoint, WorkflowID: j.WorkflowID,
		Config: json.RawMessage("null"), ExperimentalConfig: json.RawMessage("null"),
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if w := r.Metrics["num_workers"]; w >= 1 {
		r.Workers = int(w)
	} else if r.CurrentStep > 0 {
		r.Workers = 1
	}
	if j.RunID != "" {
		r.RunID = &j.RunID
	}
	if j.RetryOf != "" {
		r.RetryOf = &j.RetryOf
	}
	if j.RetriedBy != "" {
		r.RetriedBy = &j.RetriedBy
	}
	switch {
	case r.Phase != "":
	case j.Status.Terminal():
		r.Phase = phaseDone
	case j.Status == trainyard.JobPaused:
		r.Phase = workflows.PhasePaused
	case j.Status == trainyard.JobRunning:
		r.Phase = phaseTraining
	default:
		r.Phase = phaseWaiting
	}
	if ra := l.retrying; ra != nil && !j.Status.Terminal() {
		r.LastError = &lastErrorResponse{Message: ra.LastError, Activity: ra.Activity, Attempt: ra.Attempt, NextAttemptAt: ra.NextAttemptAt}
	}
	var cfg jobspec.JobConfig
	if json.Unmarshal(j.Config, &cfg) == nil {
		if cfg.TrainingDataURL != "" {
			r.TrainingDataURL = &cfg.TrainingDataURL
		}
		if len(cfg.Config) > 0 {
			r.Config = cfg.Config
		}
		if len(cfg.ExperimentalConfig) > 0 {
			r.ExperimentalConfig = cfg.ExperimentalConfig
		}
	}
	return r
}

// eventResponse is the document's TrainingJobEventResponse.
type eventResponse struct {
	ID   string         `json:"id"`
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// getTrainingJob is GET /v1/preview/training-jobs/{training_job_id}.
func (s *Server) getTrainingJob(c *gin.Context) {
	job, ok := s.pathJob(c)
	if !ok {
		return
	}
	job, l := s.liveJob(c, job)
	s.writeJSON(c, http.StatusOK, newJobResponse(job, l))
}

// liveJob completes the stored job with what its workflow knows: the
// current run id and, while it runs, its phase, its progress (which can be
// ahead of the last stored step) and a step that is failing and being
// retried. A job whose workflow ended without closing it is closed here.
// When Temporal or the workers do not answer in time, the stored job is the
// answer.
func (s *Server) liveJob(c *gin.Context, job *trainyard.Job) (*trainyard.Job, live) {
	if job.Status.Terminal() {
		return job, live{}
	}
	log := s.requestLog(c).With(zap.String("job_id", job.ID))
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.Jobs.TemporalTimeout)
	defer cancel()
	st, err := s.deps.Workflows.DescribeJob(ctx, job.ID)
	if err != nil {
		log.Info("answering from PostgreSQL: the job's workflow cannot be described", zap.Error(err))
		return job, live{}
	}
	if st.RunID != "" {
		job.RunID = st.RunID
	}
	if st.Exists && !st.Running {
		closed, err := s.deps.Workflows.ReconcileJob(ctx, job)
		if err != nil {
			log.Warn("could not close a job whose workflow ended", zap.Error(err))
			return job, live{}
		}
		return closed, live{}
	}
	if !st.Running {
		return job, live{}
	}
	l := live{retrying: st.Retrying}
	p, err := s.deps.Workflows.JobProgress(ctx, job.ID)
	if err != nil {
		log.Info("answering from PostgreSQL: no worker answered the progress query", zap.Error(err))
		return job, l
	}
	if p.CurrentStep > job.CurrentStep {
		job.CurrentStep, job.LatestMetrics = p.CurrentStep, p.Metrics
	}
	if job.TotalSteps == 0 {
		job.TotalSteps = p.TotalSteps
	}
	if job.Status == trainyard.JobQueued && p.Status == trainyard.JobRunning {
		job.Status = p.Status
	}
	l.phase = p.Phase
	return job, l
}

// listTrainingJobs is GET /v1/preview/training-jobs?model_id&after&limit&order:
// the account's jobs, newest first unless order=asc.
func (s *Server) listTrainingJobs(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	q := c.Request.URL.Query()
	modelID, _ := errs.Query(q, "model_id").Optional().UUID()
	opts := pageQuery(c, &errs, true)
	if _, given := q["order"]; !given {
		opts.Order = trainyard.OrderDesc
	}
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	if modelID != "" {
		if _, err := s.deps.Models.FindModel(ctx, acct.ID, modelID); err != nil {
			s.writeModelError(c, modelID, err)
			return
		}
	}
	page, err := s.deps.Jobs.ListJobs(ctx, acct.ID, modelID, opts)
	if err != nil {
		s.writeListError(c, opts, err)
		return
	}
	items := make([]jobResponse, len(page.Items))
	for i, j := range page.Items {
		items[i] = newJobResponse(j, live{})
	}
	s.writeJSON(c, http.StatusOK, newListResponse(items, page.HasMore, func(j jobResponse) string { return j.ID }))
}

// listTrainingJobEvents is GET /v1/preview/training-jobs/{id}/events: the
// job's events, oldest first. Events are numbered without gaps and never
// change, so a page once read stays the same.
func (s *Server) listTrainingJobEvents(c *gin.Context) {
	var errs validate.Errors
	opts := pageQuery(c, &errs, false)
	stream, _ := errs.Query(c.Request.URL.Query(), "stream").Optional().Bool()
	if v := c.GetHeader("Last-Event-ID"); stream && v != "" && opts.After == "" {
		opts.After, _ = errs.At(v, "header", "last-event-id").UUID() // a reconnecting EventSource
	}
	job, ok := s.pathJobWith(c, &errs)
	if !ok {
		return
	}
	if stream {
		s.streamEvents(c, job, opts.After)
		return
	}
	page, err := s.deps.Events.ListEvents(c.Request.Context(), job.ID, opts)
	if err != nil {
		s.writeListError(c, opts, err)
		return
	}
	items := make([]eventResponse, len(page.Items))
	for i, e := range page.Items {
		items[i] = eventResponse{ID: e.ID, Type: string(e.Type), Data: e.Data}
		if items[i].Data == nil {
			items[i].Data = map[string]any{}
		}
	}
	s.writeJSON(c, http.StatusOK, newListResponse(items, page.HasMore, func(e eventResponse) string { return e.ID }))
}

// cancelTrainingJob is POST /v1/preview/training-jobs/{id}/cancel. The
// workflow stops the step in progress, writes training_failed
// {"error_message": "cancelled"} and the CANCELLED status; checkpoints of
// earlier jobs stay. Cancelling a finished job changes nothing. The answer
// is the job as it stands (usually still RUNNING for a moment).
func (s *Server) cancelTrainingJob(c *gin.Context) {
	job, ok := s.pathJob(c)
	if !ok {
		return
	}
	if !job.Status.Terminal() {
		if err := s.deps.Workflows.CancelJob(c.Request.Context(), job.ID); err != nil {
			s.writeError(c, err)
			return
		}
		s.requestLog(c).Info("training job cancellation requested", zap.String("job_id", job.ID))
		updated, err := s.deps.Jobs.FindJob(c.Request.Context(), job.AccountID, job.ID)
		if err != nil {
			s.writeError(c, err)
			return
		}
		job = updated
	}
	s.writeJSON(c, http.StatusOK, newJobResponse(job, live{}))
}

// pathJob loads the account's job named by the training_job_id path
// parameter, answering 422 or 404 itself when it cannot.
func (s *Server) pathJob(c *gin.Context) (*trainyard.Job, bool) {
	var errs validate.Errors
	return s.pathJobWith(c, &errs)
}

func (s *Server) pathJobWith(c *gin.Context, errs *validate.Errors) (*trainyard.Job, bool) {
	id := pathUUID(c, errs, "training_job_id")
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return nil, false
	}
	job, err := s.deps.Jobs.FindJob(c.Request.Context(), accountOf(c).ID, id)
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		s.writeDetail(c, http.StatusNotFound, "Training job '"+id+"' not found.")
		return nil, false
	}
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	return job, true
}
