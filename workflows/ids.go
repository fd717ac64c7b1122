package workflows

import "strings"

// DefaultTaskQueue is the task queue of training workflows and activities
// unless configured otherwise.
const DefaultTaskQueue = "trainyard-training"

// ComputeTaskQueue is the task queue of the CPU-bound activities (Prepare,
// Train) of workflows on taskQueue. Workers poll it with a small
// concurrency limit, while the bookkeeping activities on taskQueue itself
// (waiting for a turn, closing jobs) are never starved by training.
func ComputeTaskQueue(taskQueue string) string { return taskQueue + "-compute" }

// FetchTaskQueue is the task queue of the Fetch activities (copying SFT
// training data in) of workflows on taskQueue. Downloads wait on networks,
// not CPUs, so they get slots of their own: a slow server can hold one of
// them, never a training slot.
func FetchTaskQueue(taskQueue string) string { return taskQueue + "-fetch" }

// workflowIDPrefix starts the id of every job workflow.
const workflowIDPrefix = "training-job-"

// WorkflowID is the id of the workflow of a job. It is stable, so starting a
// job twice finds the first workflow instead of running a second.
func WorkflowID(jobID string) string { return workflowIDPrefix + jobID }

// JobIDFromWorkflowID returns the job id of a job workflow id, or false.
func JobIDFromWorkflowID(workflowID string) (string, bool) {
	id, ok := strings.CutPrefix(workflowID, workflowIDPrefix)
	return id, ok && id != ""
}
