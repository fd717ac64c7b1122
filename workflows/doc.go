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
// and on any failure or cancellation the Fail activity writes
// training_failed and FAILED or CANCELLED, from a disconnected context so a
// cancelled job is still closed. Long SFT jobs continue as new, carrying
// their progress in SFTJobInput.Resume.
//
// Client wraps a Temporal client with what the API needs: start, cancel,
// progress and describe, plus Reconcile for jobs whose workflow closed
// without closing them.
package workflows
