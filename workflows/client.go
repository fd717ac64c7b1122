package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

// WorkflowState is what Client.DescribeJob reports about a job's workflow.
type WorkflowState = activities.WorkflowState

// ClientOptions configure a Client.
type ClientOptions struct {
	// TaskQueue of the job workflows; DefaultTaskQueue when empty.
	TaskQueue string
	// Workflow options written into every job started.
	Workflow Options
	// Jobs and Events let ReconcileJob close a job whose workflow ended
	// without closing it. Required for ReconcileJob.
	Jobs   trainyard.JobStore
	Events trainyard.EventStore
	// Models, when set, gives job workflows their search attributes and
	// summary (which model, of which account, on which base).
	Models trainyard.ModelStore
	// Blobs, when set, lets ReconcileJob delete the plan and intermediate
	// state of the job it closes, as the workflow's cleanup would have.
	Blobs trainyard.BlobStore
}

// Client starts, cancels and inspects job workflows. Temporal errors come
// back as trainyard errors: no workflow is ENOTFOUND, an unreachable
// Temporal (or no worker answering a query) EUNAVAILABLE.
type Client struct {
	c    client.Client
	opts ClientOptions
	// noSearch is set once Temporal refused the search attributes (a
	// namespace without them registered): jobs then start without them.
	noSearch atomic.Bool
}

// NewClient wraps a Temporal client.
func NewClient(c client.Client, opts ClientOptions) *Client {
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	return &Client{c: c, opts: opts}
}

// StartJob starts the job's workflow. Its id is WorkflowID(job.ID) and ids
// are never reused, so starting a job whose workflow exists (running or
// closed) is a success that starts nothing.
func (c *Client) StartJob(ctx context.Context, job *trainyard.Job) error {
	opts := client.StartWorkflowOptions{
		ID:                                       WorkflowID(job.ID),
		TaskQueue:                                c.opts.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
	if c.opts.Models != nil {
		model, err := c.opts.Models.FindModel(ctx, job.AccountID, job.ModelID)
		if err != nil {
			return err
		}
		opts.StaticSummary = summary(job, model)
		if !c.noSearch.Load() {
			opts.TypedSearchAttributes = startAttributes(job, model)
		}
	}
	var wf any
	var in any
	switch job.Kind {
	case trainyard.JobKindRL:
		wf, in = RLJob, RLJobInput{JobID: job.ID, Options: c.opts.Workflow.withDefaults()}
	case trainyard.JobKindSFT:
		wf, in = SFTJob, SFTJobInput{JobID: job.ID, Options: c.opts.Workflow.withDefaults()}
	default:
		return trainyard.Errorf(trainyard.EINVALID, "unknown job kind %q", job.Kind)
	}
	_, err := c.c.ExecuteWorkflow(ctx, opts, wf, in)
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) && opts.TypedSearchAttributes.Size() > 0 && strings.Contains(invalid.Error(), "search attribute") {
		// The namespace lacks trainyard's search attributes (`trainyard
		// migrate` registers them); the jobs run all the same.
		c.noSearch.Store(true)
		opts.TypedSearchAttributes = temporal.SearchAttributes{}
		_, err = c.c.ExecuteWorkflow(ctx, opts, wf, in)
	}
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return temporalError(err, "start the workflow of job %s", job.ID)
}

// CancelJob asks the job's workflow to cancel; the workflow then closes the
// job as CANCELLED. A job without a workflow (never started) is closed here
// directly, and a job whose workflow already ended is reconciled.
func (c *Client) CancelJob(ctx context.Context, jobID string) error {
	err := c.c.CancelWorkflow(ctx, WorkflowID(jobID), "")
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return temporalError(err, "cancel the workflow of job %s", jobID)
	}
	// Either there is no workflow or it has already closed.
	if c.opts.Jobs == nil || c.opts.Events == nil {
		return errors.New("workflows: CancelJob needs ClientOptions.Jobs and Events")
	}
	st, err := c.DescribeJob(ctx, jobID)
	if err != nil {
		return err
	}
	if !st.Exists {
		return activities.Finalize(ctx, c.opts.Events, jobID, trainyard.JobCancelled, "cancelled")
	}
	job, err := c.opts.Jobs.GetJob(ctx, jobID)
	if err != nil {
		return err
	}
	_, err = c.ReconcileJob(ctx, job)
	return err
}

// CancelRun asks one run of the job's workflow to cancel (a run that ends
// as its already cancelled job did needs the request: a workflow cannot
// cancel itself).
func (c *Client) CancelRun(ctx context.Context, jobID, runID string) error {
	return temporalError(c.c.CancelWorkflow(ctx, WorkflowID(jobID), runID), "cancel run %s of job %s", runID, jobID)
}

// JobProgress asks the job's workflow for its progress. It needs a worker
// to answer; bound ctx, or it waits until one does.
func (c *Client) JobProgress(ctx context.Context, jobID string) (*Progress, error) {
	v, err := c.c.QueryWorkflow(ctx, WorkflowID(jobID), "", ProgressQuery)
	if err != nil {
		return nil, temporalError(err, "query the progress of job %s", jobID)
	}
	var p Progress
	if err := v.Get(&p); err != nil {
		return nil, fmt.Errorf("decode the progress of job %s: %w", jobID, err)
	}
	return &p, nil
}

// DescribeJob reports the state of the latest run of the job's workflow;
// Exists is false when it was never started.
func (c *Client) DescribeJob(ctx context.Context, jobID string) (WorkflowState, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, WorkflowID(jobID), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return WorkflowState{}, nil
	}
	if err != nil {
		return WorkflowState{}, temporalError(err, "describe the workflow of job %s", jobID)
	}
	info := d.GetWorkflowExecutionInfo()
	status := info.GetStatus()
	st := WorkflowState{
		Exists:  true,
		Running: status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		Status:  status.String(), // as the Temporal UI shows it: "Terminated", "TimedOut", ...
		RunID:   info.GetExecution().GetRunId(),
	}
	for _, pa := range d.GetPendingActivities() {
		if f := pa.GetLastFailure(); f != nil && pa.GetAttempt() > 1 {
			r := &activities.RetryingActivity{Activity: pa.GetActivityType().GetName(), Attempt: int(pa.GetAttempt()),
				LastError: f.GetMessage()}
			if t := pa.GetScheduledTime(); t != nil && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED {
				at := t.AsTime()
				r.NextAttemptAt = &at
			}
			st.Retrying = r
			break
		}
	}
	return st, nil
}

// RetryingActivity is an activity that failed and will be tried again.
type RetryingActivity = activities.RetryingActivity

// ReconcileJob closes a job that is not terminal although its workflow
// has closed (terminated or timed out from the Temporal UI or CLI, say),
// with training_failed and CANCELLED or FAILED, and returns the job as
// stored afterwards. Other jobs come back unchanged.
func (c *Client) ReconcileJob(ctx context.Context, job *trainyard.Job) (*trainyard.Job, error) {
	if job.Status.Terminal() {
		return job, nil
	}
	if c.opts.Jobs == nil || c.opts.Events == nil {
		return nil, errors.New("workflows: ReconcileJob needs ClientOptions.Jobs and Events")
	}
	st, err := c.DescribeJob(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	if !st.Exists || st.Running {
		return job, nil
	}
	status, msg := activities.ClosedWorkflowOutcome(st.Status)
	if err := activities.CloseAbandoned(ctx, c.opts.Events, c.opts.Blobs, job.ID, status, msg); err != nil {
		return nil, err
	}
	return c.opts.Jobs.GetJob(ctx, job.ID)
}

// temporalError translates a Temporal client error.
func temporalError(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return trainyard.WrapError(trainyard.ENOTFOUND, err, "%s: no such workflow", what)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", what, err)
	case errors.Is(err, context.DeadlineExceeded), isUnavailable(err):
		return trainyard.WrapError(trainyard.EUNAVAILABLE, err, "%s: Temporal is unavailable", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func isUnavailable(err error) bool {
	var un *serviceerror.Unavailable
	var dl *serviceerror.DeadlineExceeded
	return errors.As(err, &un) || errors.As(err, &dl)
}
