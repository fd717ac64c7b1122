package activities

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// Finalize closes a job that did not complete: it appends a training_failed
// event {error_message} after the job's last event and sets the terminal
// status (JobFailed or JobCancelled) with the message as the job's error. It
// is idempotent: a job that already has a terminal event gets no second
// one, a job whose status is already terminal keeps it (the store freezes
// terminal rows), and a deleted job is not an error.
//
// The sequence number is taken from the last stored event rather than from
// the workflow, because a cancelled step may have recorded its gradient_step
// event just before it stopped.
func Finalize(ctx context.Context, events trainyard.EventStore, jobID string, status trainyard.JobStatus, message string) error {
	if !status.Terminal() || status == trainyard.JobCompleted {
		return fmt.Errorf("finalize job %s: status %s is not a failure status", jobID, status)
	}
	// The progress row trails the events by up to a ProgressInterval; the
	// closed job reports every gradient_step it recorded (pauses add
	// events of their own, so they are counted, not inferred from seq).
	done, err := events.CountEvents(ctx, jobID, trainyard.EventGradientStep)
	if err != nil {
		return fmt.Errorf("finalize job %s: %w", jobID, err)
	}
	now := time.Now().UTC()
	_, err = events.EndJob(ctx,
		&trainyard.Event{JobID: jobID, Type: trainyard.EventTrainingFailed, Data: map[string]any{"error_message": message}},
		trainyard.JobUpdate{Status: &status, Error: &message, FinishedAt: &now, CurrentStep: &done})
	if err != nil && !isCode(err, trainyard.ENOTFOUND) {
		return fmt.Errorf("finalize job %s: %w", jobID, err)
	}
	return nil
}

// Fail is the activity that closes a failed or cancelled job (see Finalize).
func (a *Activities) Fail(ctx context.Context, in FailInput) error {
	// Scratch first, as in Complete: a closed job holds only its inputs.
	if err := a.dropScratch(ctx, in.JobID); err != nil {
		return err
	}
	if err := Finalize(ctx, a.d.Events, in.JobID, in.Status, in.Message); err != nil {
		return classify(err, "record the job's failure")
	}
	if job, err := a.d.Jobs.GetJob(ctx, in.JobID); err == nil {
		telemetry.JobsEnded.WithLabelValues(string(job.Kind), string(job.Status)).Inc()
	}
	a.d.Logger.Info("job closed", zap.String("job_id", in.JobID), zap.String("status", string(in.Status)),
		zap.String("error", in.Message))
	return nil
}

// dropScratch deletes the job's scratch objects (DropScratch) as an
// activity step.
func (a *Activities) dropScratch(ctx context.Context, jobID string) error {
	if err := DropScratch(ctx, a.d.Blobs, jobID); err != nil {
		return classify(err, "delete the job's intermediate state")
	}
	return nil
}

// DropScratch deletes what a job stored only to get through its steps (its
// plan and intermediate training state) once the job has ended: a finished
// job keeps its inputs and, if it completed, its checkpoint, nothing else.
func DropScratch(ctx context.Context, blobs trainyard.BlobStore, jobID string) error {
	for _, prefix := range []string{statePrefix, planFile} {
		if err := blobs.DeleteJobFilesWithPrefix(ctx, jobID, prefix); err != nil {
			return fmt.Errorf("delete the intermediate state of job %s: %w", jobID, err)
		}
	}
	return nil
}

// CloseAbandoned closes a job whose workflow ended without closing it (a
// terminate, a timeout): like the workflow's own cleanup, its scratch
// objects go first (when blobs is set), then Finalize records the end, then
// the scratch objects go once more. The terminated run's Train activity may
// still be training until its next heartbeat: state it stores between the
// first pass and the close is not its own to delete (it drops a closed
// job's scratch when it returns, but it found the job open), so the second
// pass does; whatever it stores after the close, it deletes itself.
func CloseAbandoned(ctx context.Context, events trainyard.EventStore, blobs trainyard.BlobStore,
	jobID string, status trainyard.JobStatus, message string) error {
	if blobs != nil {
		if err := DropScratch(ctx, blobs, jobID); err != nil {
			return err
		}
	}
	if err := Finalize(ctx, events, jobID, status, message); err != nil {
		return err
	}
	if blobs == nil {
		return nil
	}
	return DropScratch(ctx, blobs, jobID) // a retry finds the job finalized and passes again
}
