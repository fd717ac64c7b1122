package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/internal/telemetry"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/workflows"
)

// retryTrainingJob is POST /v1/preview/training-jobs/{id}/retry
// (trainyard's own): a FAILED or CANCELLED job runs again as a new job with
// the same stored inputs (request, configuration, SFT data as first
// fetched), from the model's newest checkpoint when its turn comes. The two
// are linked both ways (retry_of, retried_by); a job is retried once, and
// an Idempotency-Key makes a repeated POST return the same new job. The
// answer is the new job.
func (s *Server) retryTrainingJob(c *gin.Context) {
	var errs validate.Errors
	key := idempotencyKey(c, &errs)
	old, ok := s.pathJobWith(c, &errs)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	if old.RetriedBy != "" {
		if existing, err := s.deps.Jobs.FindJob(ctx, old.AccountID, old.RetriedBy); err == nil && key != nil &&
			existing.IdempotencyKey != nil && *existing.IdempotencyKey == *key {
			s.writeJSON(c, http.StatusOK, newJobResponse(existing, live{}))
			return
		}
		s.writeDetail(c, http.StatusConflict, fmt.Sprintf("Training job '%s' was retried already, by job '%s'; retry that one.", old.ID, old.RetriedBy))
		return
	}
	if old.Status != trainyard.JobFailed && old.Status != trainyard.JobCancelled {
		s.writeDetail(c, http.StatusConflict, fmt.Sprintf(
			"Training job '%s' is %s; only a FAILED or CANCELLED job can be retried.", old.ID, old.Status))
		return
	}
	id, err := uuid.NewV7()
	if err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.copyInputs(ctx, old.ID, id.String()); err != nil {
		s.writeError(c, err)
		return
	}
	job, created, err := s.deps.Jobs.CreateJob(ctx, &trainyard.Job{
		ID: id.String(), AccountID: old.AccountID, ModelID: old.ModelID, Kind: old.Kind, IdempotencyKey: key,
		Config: old.Config, WorkflowID: workflows.WorkflowID(id.String()), RequestHash: "retry:" + old.ID, RetryOf: old.ID,
	})
	if err != nil || !created {
		s.dropUnusedInput(c, id.String())
	}
	switch {
	case trainyard.ErrorCode(err) == trainyard.ECONFLICT:
		// Another retry of the same job won the race.
		s.writeDetail(c, http.StatusConflict, fmt.Sprintf("Training job '%s' was retried already; GET it to see by which job.", old.ID))
		return
	case err != nil:
		s.writeModelError(c, old.ModelID, err)
		return
	case !created && job.RequestHash != "retry:"+old.ID:
		s.writeDetail(c, http.StatusConflict, "The Idempotency-Key was already used for a different request (job "+
			job.ID+"); send the same body to get that job again, or use a new key.")
		return
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.Jobs.StartTimeout)
	err = s.deps.Workflows.StartJob(sctx, job)
	cancel()
	log := s.requestLog(c).With(zap.String("job_id", job.ID), zap.String("retry_of", old.ID))
	if err != nil {
		log.Warn("retry accepted but its workflow did not start yet", zap.Error(err))
	}
	if created {
		telemetry.JobsSubmitted.WithLabelValues(string(job.Kind)).Inc()
		log.Info("training job retried")
	}
	s.writeJSON(c, http.StatusOK, newJobResponse(job, live{}))
}

// copyInputs copies a job's input documents to another job: its request and,
// for SFT, the data as first fetched, so the retry trains on the same bytes
// even if the URL now serves others.
func (s *Server) copyInputs(ctx context.Context, from, to string) error {
	for _, name := range []string{jobspec.InputFile, jobspec.DataFile} {
		rc, err := s.deps.Blobs.GetJobInput(ctx, from, name)
		if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
			continue // RL jobs have no data file; an SFT job that never fetched has none yet
		}
		if err != nil {
			return err
		}
		// Streamed: SFT data may be hundreds of megabytes.
		err = s.deps.Blobs.PutJobInput(ctx, to, name, rc, -1)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
