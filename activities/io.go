package activities

import "github.com/trainyard/trainyard"

// This file holds the inputs and results of the activities. They travel
// through Temporal histories, so fields are only ever added (with zero values
// that keep the old meaning), never renamed or retyped.

// WaitTurnInput asks for a job's turn on its model.
type WaitTurnInput struct {
	JobID string
}

// WaitTurnResult says where the job starts from once it is first in line.
type WaitTurnResult struct {
	// Finished is true when the job is already terminal (it was cancelled
	// before its workflow ran, or the workflow was reset after the end):
	// there is nothing left to do.
	Finished bool
	// Status and Error are the finished job's outcome, which its workflow
	// ends with, so Temporal shows what the API shows.
	Status trainyard.JobStatus `json:",omitempty"`
	Error  string              `json:",omitempty"`
	// CancelRequested is set for a cancelled job when the activity asked
	// Temporal to cancel the run, which then ends as Canceled.
	CancelRequested bool `json:",omitempty"`
	// BaseStep is the model's latest checkpoint step when the job got its
	// turn (0: the base model). The job writes checkpoint BaseStep+1.
	BaseStep int
}

// PrepareInput asks to load, validate and tokenise a job's input.
type PrepareInput struct {
	JobID    string
	Kind     trainyard.JobKind
	BaseStep int
}

// PrepareResult describes the prepared plan.
type PrepareResult struct {
	// TotalSteps is the number of gradient steps (optimizer updates).
	TotalSteps int
	// NumExamples is the number of training sequences (SFT: conversations
	// per epoch; RL: trajectories and additional histories).
	NumExamples int
	// WorkerQueue is the own compute task queue of the worker that
	// prepared the job, where its first Train goes (empty from workers
	// without one).
	WorkerQueue string `json:",omitempty"`
}

// TrainInput asks for the next gradient steps of a job.
type TrainInput struct {
	JobID      string
	BaseStep   int
	Done       int // gradient steps already completed
	TotalSteps int
	// EventOffset is how many events the job's pauses added before this
	// activity's steps (training_paused and training_resumed): step n's
	// gradient_step has seq n+1+EventOffset.
	EventOffset int `json:",omitempty"`
}

// TrainResult reports the progress of a training activity.
type TrainResult struct {
	// Done is the number of gradient steps completed after this activity;
	// more than the input's Done (or equal to it when Paused), and at most
	// TotalSteps.
	Done int
	// Metrics are the metrics of the last completed step.
	Metrics map[string]float64
	// Paused is set when the activity stopped because the job was asked to
	// pause; the training state after Done steps is stored.
	Paused bool `json:",omitempty"`
	// WorkerQueue is the own compute task queue of the worker that ran the
	// chunk and keeps the job's state in memory: the next chunk goes there.
	WorkerQueue string `json:",omitempty"`
	// Checksum is the adapter's checksum after a data-parallel step
	// (ApplyStep), which the next step's shard workers catch up to, and
	// StateBytes the size of the state ApplyStep stored.
	Checksum   uint32 `json:",omitempty"`
	StateBytes int64  `json:",omitempty"`
}

// CompleteInput asks to record a job's checkpoint and close it successfully.
type CompleteInput struct {
	JobID          string
	CheckpointStep int
	TotalSteps     int
	// Metrics of the final gradient step; the checkpoint stores them under
	// "train/<name>".
	Metrics map[string]float64
	// EventOffset counts the events the job's pauses added (see TrainInput).
	EventOffset int `json:",omitempty"`
}

// RequestPauseInput asks the job's Train activity to stop at the next step
// boundary.
type RequestPauseInput struct {
	JobID string
}

// PauseInput records that a job paused after Step of TotalSteps steps;
// training_paused gets sequence number Seq.
type PauseInput struct {
	JobID      string
	Step       int
	TotalSteps int
	Seq        int
}

// ResumeInput records that a paused job goes on at Step+1; training_resumed
// gets sequence number Seq.
type ResumeInput struct {
	JobID      string
	Step       int
	TotalSteps int
	Seq        int
}

// RetentionInput asks to apply the checkpoint policy of the job's model.
type RetentionInput struct {
	JobID string
}

// RetentionResult lists what retention deleted.
type RetentionResult struct {
	// Deleted are the checkpoint steps removed by the policy.
	Deleted []int `json:",omitempty"`
	// Swept are steps whose orphaned objects were removed.
	Swept []int `json:",omitempty"`
}

// FailInput asks to close a job unsuccessfully.
type FailInput struct {
	JobID   string
	Status  trainyard.JobStatus // JobFailed or JobCancelled
	Message string
}

// heartbeat is what long activities record as heartbeat details: how far the
// durable state reaches, so a retry resumes from there.
type heartbeat struct {
	// Saved is the number of completed steps whose adapter and optimizer
	// state is stored (Train), or a phase marker (WaitTurn: 0).
	Saved int
	// Waiting names the job this one waits for (WaitTurn), for operators
	// reading the pending activity in the Temporal UI.
	Waiting string `json:",omitempty"`
	// Step, TotalSteps and Loss tell operators how far a Train activity
	// has got (Saved may lag behind Step: state is stored every few
	// seconds).
	Step       int      `json:",omitempty"`
	TotalSteps int      `json:",omitempty"`
	Loss       *float64 `json:",omitempty"`
}
