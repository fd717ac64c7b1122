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
//	Complete  checkpoint row, then training_ended and COMPLETED together
//
// Prepare and Train run on compute queues, which workers poll with a small
// concurrency limit (training keeps every core busy), so the bookkeeping
// activities on the job queue itself are never starved: Place finds the
// job's base model, Prepare runs on BaseTaskQueue(queue, base), polled only
// by workers holding it, and each Train chunk on the WorkerTaskQueue of the
// worker that keeps the job's state in memory, falling back to the base
// model's queue when that worker is gone (route.go). Runs from before
// routing use ComputeTaskQueue(queue). On any
// failure or cancellation the Fail activity writes training_failed and
// FAILED or CANCELLED, from a disconnected context so a cancelled job is
// still closed. Long SFT jobs continue as new, carrying their progress in
// SFTJobInput.Resume.
//
// A job may be paused and resumed at a step boundary through the Temporal
// Updates "pause" and "resume" (control.go), and after it ends the model's
// checkpoint policy is applied (ApplyRetention, retention.go).
//
// Client wraps a Temporal client with what the API needs: StartJob,
// CancelJob, PauseJob, ResumeJob, JobProgress and DescribeJob, plus
// ReconcileJob for jobs whose workflow closed without closing them.
//
// # Changing workflow code
//
// Running workflows replay their history on whatever code a worker has, so
// every change must replay every history in testdata (replay_test.go):
//
//   - A change to the commands a run that already exists may have issued or
//     will issue (a new activity, timer, upsert or marker on a path old runs
//     take) is gated by workflow.GetVersion with a change id of its own (a
//     named constant: fetchVersion, searchVersion, closedOutcomeVersion,
//     retentionVersion, routeVersion), so old runs keep the old path. A
//     change of an activity's task queue counts as such a change
//     (routeVersion moved Prepare and Train off the shared compute queue).
//   - Commands that only follow a message old code could not accept (the
//     pause and resume updates: a worker without their handlers rejects
//     them, and rejected updates leave no history) need no gate.
//   - Inputs and results travel in histories: fields are only added, with
//     zero values meaning the old behaviour and `json:",omitempty"`, so an
//     old run's payloads stay byte for byte what they were.
//   - New paths get new recorded histories (TRAINYARD_RECORD_HISTORIES=1 with
//     the e2e test that runs them) under new names; existing files are never
//     re-recorded over, so old and new shapes both keep replaying.
package workflows
