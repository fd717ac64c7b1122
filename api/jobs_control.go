package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// pauseTrainingJob is POST /v1/preview/training-jobs/{id}/pause (trainyard's
// own): the job stops after the step in progress, with its training state
// stored at that step, and shows PAUSED (with a training_paused event) until
// it is resumed or cancelled. The answer is the job as it stands once the
// request is recorded (phase "pausing" until the step ends).
func (s *Server) pauseTrainingJob(c *gin.Context) {
	s.controlJob(c, "pause", "only a QUEUED or RUNNING job can be paused", s.deps.Workflows.PauseJob)
}

// resumeTrainingJob is POST /v1/preview/training-jobs/{id}/resume
// (trainyard's own): a PAUSED job trains again from its next step with the
// optimizer state it paused with (a training_resumed event marks it).
func (s *Server) resumeTrainingJob(c *gin.Context) {
	s.controlJob(c, "resume", "only a PAUSED job can be resumed", s.deps.Workflows.ResumeJob)
}

// controlJob sends a pause or resume to the job's workflow, whose validator
// decides whether the transition makes sense (409 with its reason when not),
// and answers with the job.
func (s *Server) controlJob(c *gin.Context, verb, rule string, send func(context.Context, string) error) {
	job, ok := s.pathJob(c)
	if !ok {
		return
	}
	conflict := func(j *trainyard.Job) {
		s.writeDetail(c, http.StatusConflict, fmt.Sprintf("Training job '%s' is %s; %s.", j.ID, j.Status, rule))
	}
	if job.Status.Terminal() {
		conflict(job)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.Jobs.ControlTimeout)
	err := send(ctx, job.ID)
	cancel()
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		// No running workflow: it ended without closing the job (closed
		// now, then told), or it has not started yet.
		if closed, _ := s.liveJob(c, job); closed.Status.Terminal() {
			conflict(closed)
			return
		}
		s.writeDetail(c, http.StatusConflict, fmt.Sprintf(
			"Training job '%s' has not started yet (its workflow is not running); try again in a moment.", job.ID))
		return
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.requestLog(c).Info("training job "+verb+" requested", zap.String("job_id", job.ID))
	updated, err := s.deps.Jobs.FindJob(c.Request.Context(), job.AccountID, job.ID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	updated, l := s.liveJob(c, updated)
	s.writeJSON(c, http.StatusOK, newJobResponse(updated, l))
}
