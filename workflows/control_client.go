package workflows

import (
	"context"
	"errors"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

// PauseJob asks the job's workflow to pause after the step in progress (the
// pause update) and returns once the request is recorded; the job becomes
// PAUSED at the next step boundary. A transition the workflow refuses is
// ECONFLICT with its reason; no running workflow is ENOTFOUND.
func (c *Client) PauseJob(ctx context.Context, jobID string) error {
	return c.update(ctx, jobID, PauseUpdate)
}

// ResumeJob asks the job's paused workflow to go on (the resume update); the
// job trains again from its next step.
func (c *Client) ResumeJob(ctx context.Context, jobID string) error {
	return c.update(ctx, jobID, ResumeUpdate)
}

// update sends an update to the job's workflow and waits for its outcome.
func (c *Client) update(ctx context.Context, jobID, name string) error {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   WorkflowID(jobID),
		UpdateName:   name,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case ErrInvalidTransition:
			return trainyard.WrapError(trainyard.ECONFLICT, err, "%s", appErr.Message())
		case activities.ErrGone:
			return trainyard.WrapError(trainyard.ECONFLICT, err, "Training job '%s' ended while it was asked to %s.", jobID, name)
		}
	}
	return temporalError(err, "%s job %s", name, jobID)
}
