package workflows

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// DefaultTaskQueue is the task queue of training workflows and activities
// unless configured otherwise.
const DefaultTaskQueue = "trainyard-training"

// ComputeTaskQueue is the task queue of the CPU-bound activities (Prepare,
// Train) of workflows on taskQueue. Workers poll it with a small
// concurrency limit, while the bookkeeping activities on taskQueue itself
// (waiting for a turn, closing jobs) are never starved by training.
func ComputeTaskQueue(taskQueue string) string { return taskQueue + "-compute" }

// BaseTaskQueue is the compute task queue of workflows on taskQueue for jobs
// on the base model base: only workers that hold base poll it, so a job's
// Prepare (and a Train that lost its worker) reaches a worker that can run
// it. The model name is kept readable in the queue's name, with characters
// outside [A-Za-z0-9._-] replaced and a hash of the exact name appended when
// any was, so two names never share a queue.
func BaseTaskQueue(taskQueue, base string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, base)
	if clean != base {
		h := fnv.New32a()
		h.Write([]byte(base))
		clean = fmt.Sprintf("%s-%08x", clean, h.Sum32())
	}
	return ComputeTaskQueue(taskQueue) + "-base-" + clean
}

// WorkerTaskQueue is the compute task queue that only the worker with the
// given id polls: a job's Train chunks go there while that worker holds the
// job's training state in memory.
func WorkerTaskQueue(taskQueue, workerID string) string {
	return ComputeTaskQueue(taskQueue) + "-worker-" + workerID
}

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
