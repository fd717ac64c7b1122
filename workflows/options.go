package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Activity options of the job phases. Every activity is idempotent, so
// retries are safe; activities mark bad input and non-finite losses as
// non-retryable themselves. Cancellation waits for the activity to stop
// (WaitForCancellation), so a cancelled job is closed only after its step
// has stopped writing.

// gateOptions: waiting for the model can take as long as the jobs ahead;
// the activity heartbeats, and its start-to-close timeout merely restarts
// the wait now and then.
func gateOptions(o Options) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		Summary:             "wait for the model's earlier jobs",
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    o.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	}
}

// prepareOptions: tokenising data heartbeats. A failure of the platform's
// own (database, object store) is retried with capped backoff for as long
// as the job's deadline allows, so an outage delays the job instead of
// failing it; bad input fails it at once (non-retryable errors).
func prepareOptions(o Options, queue string, remaining time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		Summary:                "read, check and tokenise the job's input",
		TaskQueue:              queue,
		StartToCloseTimeout:    30 * time.Minute,
		ScheduleToCloseTimeout: remaining,
		HeartbeatTimeout:       o.HeartbeatTimeout,
		WaitForCancellation:    true,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	}
}

// trainOptions: a Train activity runs for about its chunk duration plus one
// step and heartbeats throughout, so a dead worker is noticed within the
// heartbeat timeout and the step resumes elsewhere from the saved state.
// Like Prepare, it retries outages until the job's deadline.
func trainOptions(o Options, queue string, remaining time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:              queue,
		StartToCloseTimeout:    time.Hour,
		ScheduleToCloseTimeout: remaining,
		HeartbeatTimeout:       o.HeartbeatTimeout,
		WaitForCancellation:    true,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	}
}

// recordOptions: closing a job must eventually succeed, whatever the
// outage, or the job would stay RUNNING; these writes are small and
// idempotent, so they retry without limit.
func recordOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	}
}

// fetchOptions: copying training data in heartbeats its progress; each
// attempt has its own deadline inside the activity. Attempts are not counted
// (an account past its share of downloads retries until a slot frees up);
// the whole fetch is bounded instead, and data that can never be read fails
// at once as invalid input. A data server that keeps failing in a way that
// may pass fails the fetch sooner, once the activities' retry window
// (TRAINYARD_DOWNLOAD_RETRY_WINDOW) is used up; the activity sets the
// backoff of those retries itself.
func fetchOptions(o Options, queue string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		Summary:                "copy the training data in",
		TaskQueue:              queue,
		StartToCloseTimeout:    30 * time.Minute,
		ScheduleToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:       o.HeartbeatTimeout,
		WaitForCancellation:    true,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	}
}

// placeOptions: finding a worker that holds the job's base model fails,
// retryably, while none does; the job then waits, its last_error saying
// why, and looks again at most every 30 s.
func placeOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		Summary:             "find workers holding the job's base model",
		StartToCloseTimeout: time.Minute,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	}
}

// stickyTrainOptions: a Train chunk sent to the worker that holds the job's
// state in memory gets one attempt. If that worker is gone (its task is not
// picked up within a heartbeat timeout, or the chunk stops heartbeating) or
// the chunk fails retryably, the workflow sends the chunk to the base
// model's queue with the usual retries, and any holder resumes from the
// stored state.
func stickyTrainOptions(o Options, queue string, remaining time.Duration) workflow.ActivityOptions {
	ao := trainOptions(o, queue, remaining)
	ao.ScheduleToStartTimeout = o.HeartbeatTimeout
	ao.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
	return ao
}
