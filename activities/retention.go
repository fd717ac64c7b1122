package activities

import (
	"context"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// ApplyRetention applies the checkpoint policy of the job's model after the
// job has ended (package retention): the checkpoints the policy does not
// keep go, rows first and then their objects, and objects an interrupted
// run left behind are swept. A model deleted meanwhile has nothing left.
func (a *Activities) ApplyRetention(ctx context.Context, in RetentionInput) (*RetentionResult, error) {
	job, err := a.d.Jobs.GetJob(ctx, in.JobID)
	if isCode(err, trainyard.ENOTFOUND) {
		return &RetentionResult{}, nil
	}
	if err != nil {
		return nil, classify(err, "load job")
	}
	model, err := a.d.Models.FindModel(ctx, job.AccountID, job.ModelID)
	if isCode(err, trainyard.ENOTFOUND) {
		return &RetentionResult{}, nil
	}
	if err != nil {
		return nil, classify(err, "load the job's model")
	}
	res, err := a.prune.Apply(ctx, model)
	if err != nil {
		return nil, classify(err, "apply the model's checkpoint policy")
	}
	if len(res.Deleted)+len(res.Swept) > 0 {
		a.d.Logger.Info("checkpoint policy applied", zap.String("job_id", job.ID), zap.String("model_id", model.ID),
			zap.Ints("deleted_steps", res.Deleted), zap.Ints("swept_steps", res.Swept))
	}
	return &RetentionResult{Deleted: res.Deleted, Swept: res.Swept}, nil
}
