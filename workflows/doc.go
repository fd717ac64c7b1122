// Package workflows orchestrates training jobs on Temporal. Each job is one
// workflow, RLJob or SFTJob, with the id WorkflowID(jobID), on the task queue
// DefaultTaskQueue unless configured otherwise. The workflows are
// deterministic: every side effect (the job gate, data preparation, gradient
// steps, checkpoints, events, job status) is an activity of package
// activities.
//
// A job runs through the same phases whatever its kind:
//
//	WaitTurn  wait until no older unfinished job on the model remains
//	Prepare   load, validate and tokenise the input; training_started
//	Train     gradient steps (one or more per activity), gradient_step each
//	Complete  checkpoint row, then training_ended, then COMPLETED
//
// Prepare and Train run on ComputeTaskQueue(queue), which workers poll with
// a small concurrency limit (training keeps every core busy), so the
// bookkeeping activities on the job queue itself are never starved. On any
// failure or cancellation the Fail activity writes training_failed and
// FAILED or CANCELLED, from a disconnected context so a cancelled job is
// still closed. Long SFT jobs continue as new, carrying their progress in
// SFTJobInput.Resume.
//
// Client wraps a Temporal client with what the API needs: StartJob,
// CancelJob, JobProgress and DescribeJob, plus ReconcileJob for jobs whose
// workflow closed without closing them.
package workflows
