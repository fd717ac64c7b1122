package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard/activities"
)

// retentionVersion marks workflows that apply the model's checkpoint policy
// after the job; histories from before it replay without the activity.
const retentionVersion = "retention-after-job"

// retentionOptions: retention tidies up after a job that has already ended,
// so it must never hold the workflow open for long. A failure is retried a
// few times, then left to the next job of the model (retention is
// idempotent and finishes what an interrupted run started).
func retentionOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		Summary:                "apply the model's checkpoint policy",
		StartToCloseTimeout:    5 * time.Minute,
		ScheduleToCloseTimeout: 15 * time.Minute,
		WaitForCancellation:    true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute, MaximumAttempts: 5},
	}
}

// retain applies the model's checkpoint policy once the job has ended
// (completed, failed or cancelled), as a durable step of its own.
func (j *job) retain(ctx workflow.Context) {
	if workflow.GetVersion(ctx, retentionVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	var res activities.RetentionResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, retentionOptions()), a.ApplyRetention,
		activities.RetentionInput{JobID: j.id}).Get(ctx, &res)
	if err != nil {
		workflow.GetLogger(ctx).Warn("could not apply the model's checkpoint policy; the next job will", "JobID", j.id, "Error", err)
		return
	}
	if len(res.Deleted) > 0 {
		workflow.GetLogger(ctx).Info("checkpoint policy applied", "JobID", j.id, "Deleted", res.Deleted)
	}
}
