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
// last Train activity), then the training_ended event, then the COMPLETED
// status, in that order, so a client that sees training_ended finds the
// checkpoint. Every write is idempotent.
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
	data := map[string]any{"step": in.CheckpointStep, "num_gradient_steps": in.TotalSteps}
	seq, err := appendTerminal(ctx, a.d.Events, job.ID, trainyard.EventTrainingEnded, data)
	if err != nil {
		return classify(err, "record training_ended")
	}
	if want := in.TotalSteps + 2 + in.EventOffset; seq != want {
		// Only a failed job (closed by someone else) lands here; the
		// checkpoint stays, as checkpoints of cancelled jobs do.
		a.d.Logger.Warn("job already had a terminal event", zap.String("job_id", job.ID),
			zap.Int("seq", seq), zap.Int("expected_seq", want))
	}
	// The plan and intermediate state go before the status says COMPLETED,
	// so a client that sees a finished job sees what it keeps.
	if err := a.dropScratch(ctx, job.ID); err != nil {
		return err
	}
	status := trainyard.JobCompleted
	now := time.Now().UTC()
	step := in.CheckpointStep
	err = a.d.Jobs.UpdateJob(ctx, job.ID, trainyard.JobUpdate{
		Status: &status, FinishedAt: &now, Checkpoint: &step, CurrentStep: &in.TotalSteps,
	})
	if err != nil {
		return classify(err, "mark job completed")
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
