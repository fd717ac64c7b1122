package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// Complete records the job's checkpoint row (its objects were stored by the
// last Train activity), drops the job's scratch state, then records the
// training_ended event and the COMPLETED status together, in that order, so
// a client that sees training_ended (or COMPLETED) finds the checkpoint and
// the other of the two. Every write is idempotent.
func (a *Activities) Complete(ctx context.Context, in CompleteInput) error {
	job, err := a.d.Jobs.GetJob(ctx, in.JobID)
	if err != nil {
		return classify(err, "load job")
	}
	ckpt := &trainyard.Checkpoint{
		ModelID: job.ModelID,
		Step:    in.CheckpointStep,
		JobID:   &job.ID,
		Metrics: prefixed("train/", in.Metrics),
	}
	if err := a.d.Models.CreateCheckpoint(ctx, ckpt); err != nil {
		return classify(err, "record checkpoint")
	}
	if ckpt.JobID == nil || *ckpt.JobID != job.ID {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("checkpoint step %d of the model was written by another job meanwhile", in.CheckpointStep),
			ErrConflict, nil)
	}
	// The plan and intermediate state go before the job is seen to end, so
	// a client that sees a finished job sees what it keeps.
	if err := a.dropScratch(ctx, job.ID); err != nil {
		return err
	}
	status := trainyard.JobCompleted
	now := time.Now().UTC()
	step := in.CheckpointStep
	ended, err := a.d.Events.EndJob(ctx,
		&trainyard.Event{JobID: job.ID, Type: trainyard.EventTrainingEnded,
			Data: map[string]any{"step": in.CheckpointStep, "num_gradient_steps": in.TotalSteps}},
		trainyard.JobUpdate{Status: &status, FinishedAt: &now, Checkpoint: &step, CurrentStep: &in.TotalSteps})
	if err != nil {
		return classify(err, "record training_ended and the COMPLETED status")
	}
	if want := in.TotalSteps + 2 + in.EventOffset; ended.Type != trainyard.EventTrainingEnded || ended.Seq != want {
		a.d.Logger.Warn("job's terminal event is not the one expected", zap.String("job_id", job.ID),
			zap.String("type", string(ended.Type)), zap.Int("seq", ended.Seq), zap.Int("expected_seq", want))
	}
	if ended.Type != trainyard.EventTrainingEnded {
		// Closed by someone else meanwhile: it keeps that outcome, and the
		// checkpoint stays, as checkpoints of cancelled jobs do.
		return nil
	}
	telemetry.JobsEnded.WithLabelValues(string(job.Kind), string(trainyard.JobCompleted)).Inc()
	a.d.Logger.Info("job completed", zap.String("job_id", job.ID), zap.String("model_id", job.ModelID),
		zap.Int("checkpoint_step", step))
	return nil
}

// prefixed copies m with every key prefixed.
func prefixed(prefix string, m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[prefix+k] = v
	}
	return out
}
