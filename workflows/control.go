package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

// Pause and resume are Temporal Updates of a job's workflow, so the API, the
// Temporal UI and the CLI (`temporal workflow update execute --name pause`)
// act alike. Each has a validator: an update that makes no sense in the
// job's state is rejected with a message saying why (ErrInvalidTransition,
// which the API answers as 409) and leaves no trace in the history.
//
// A pause takes effect at a step boundary. Its handler records the request
// in the job row (RequestPause), where the running Train activity sees it
// between two steps, stores the training state at that step and returns; a
// request that arrives while no Train runs (the job is waiting for its turn
// or preparing) takes effect before the first step. The workflow then
// records PAUSED and training_paused (the Pause activity) and waits for the
// resume update, holding no activity, no task slot and no compute. Resume
// records RUNNING and training_resumed (the Resume activity), and the next
// Train continues from the stored state at exactly the next step.

// Names of the updates.
const (
	PauseUpdate  = "pause"
	ResumeUpdate = "resume"
)

// ErrInvalidTransition is the type of the application error a pause or
// resume validator rejects an update with; its message says why.
const ErrInvalidTransition = "InvalidTransition"

// pauseState is how far a pause request has got.
type pauseState int

const (
	pauseNone      pauseState = iota
	pauseRequested            // accepted; the job row is being flagged
	pauseArmed                // the job row is flagged: Train stops at the next step boundary
	pauseRecording            // stopped at a boundary; the Pause activity records PAUSED
)

// control is the pause state of a job workflow run.
type control struct {
	pause  pauseState
	paused bool // PAUSED: between training_paused and the resume
	resume bool // a resume was accepted; the paused loop goes on
	pauses int  // completed pause/resume cycles of the job (across runs)
}

// eventOffset is how many events the job's pauses added before its next
// gradient_step: a training_paused and a training_resumed each.
func (c *control) eventOffset() int { return 2 * c.pauses }

// setupControl registers the pause and resume updates.
func (j *job) setupControl(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, PauseUpdate, j.requestPause,
		workflow.UpdateHandlerOptions{Validator: j.validatePause, Description: "pause the job after the step in progress"}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, ResumeUpdate, j.requestResume,
		workflow.UpdateHandlerOptions{Validator: j.validateResume, Description: "resume a paused job at its next step"})
}

func invalidTransition(format string, args ...any) error {
	return temporal.NewApplicationError(fmt.Sprintf(format, args...), ErrInvalidTransition)
}

// validatePause accepts a pause of a job that may still train.
func (j *job) validatePause() error {
	switch st := j.progress.Status; {
	case st.Terminal():
		return invalidTransition("Training job '%s' is %s; only a QUEUED or RUNNING job can be paused.", j.id, st)
	case j.ctl.paused:
		return invalidTransition("Training job '%s' is already PAUSED; resume it with POST .../resume.", j.id)
	case j.ctl.pause != pauseNone:
		return invalidTransition("Training job '%s' is already pausing; it stops after the step in progress.", j.id)
	case j.progress.Phase == PhaseSaving || (j.total > 0 && j.done >= j.total):
		return invalidTransition("Training job '%s' has done all its %d steps and is saving its checkpoint; there is nothing left to pause.", j.id, j.total)
	}
	return nil
}

// requestPause flags the job row for the Train activity. The main loop
// pauses only once the flag is written (pauseArmed), so a Pause activity
// never clears the flag before it is set.
func (j *job) requestPause(ctx workflow.Context) error {
	j.ctl.pause = pauseRequested
	opts := recordOptions()
	opts.Summary = "ask the job to pause after the step in progress"
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.RequestPause,
		activities.RequestPauseInput{JobID: j.id}).Get(ctx, nil)
	if err != nil {
		j.ctl.pause = pauseNone
		return err
	}
	j.ctl.pause = pauseArmed
	workflow.GetLogger(ctx).Info("pause requested", "JobID", j.id, "Done", j.done)
	return nil
}

// validateResume accepts a resume of a PAUSED job, or of one whose pause is
// being recorded (its row may already say PAUSED to a client that read it;
// the pause then ends as soon as it is recorded).
func (j *job) validateResume() error {
	switch st := j.progress.Status; {
	case st.Terminal():
		return invalidTransition("Training job '%s' is %s; only a PAUSED job can be resumed.", j.id, st)
	case j.ctl.resume:
		return invalidTransition("Training job '%s' is already resuming.", j.id)
	case j.ctl.pause == pauseRequested || j.ctl.pause == pauseArmed:
		return invalidTransition("Training job '%s' is pausing after the step in progress; resume it once it is PAUSED.", j.id)
	case !j.ctl.paused && j.ctl.pause != pauseRecording:
		return invalidTransition("Training job '%s' is %s, not PAUSED; only a PAUSED job can be resumed.", j.id, st)
	}
	return nil
}

// requestResume lets the paused loop go on and returns once the job is
// RUNNING again (recorded by the Resume activity, which clears resume), so
// whoever resumed it reads RUNNING at once; its next step follows straight
// away.
func (j *job) requestResume(ctx workflow.Context) error {
	j.ctl.resume = true
	return workflow.Await(ctx, func() bool { return !j.ctl.resume || j.progress.Status.Terminal() })
}

// pauseHere holds the job between two steps, after the step j.done, until a
// resume (or a cancellation, which returns its error). The training state
// at j.done is stored: a Train activity always stores it before returning,
// and before the first step it is the checkpoint the job started from.
func (j *job) pauseHere(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return j.ctl.pause == pauseArmed }); err != nil {
		return err
	}
	seq := j.done + 2 + j.ctl.eventOffset() // after training_started and every earlier event
	j.ctl.pause = pauseRecording
	opts := recordOptions()
	opts.Summary = fmt.Sprintf("pause after step %d", j.done)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.Pause,
		activities.PauseInput{JobID: j.id, Step: j.done, TotalSteps: j.total, Seq: seq}).Get(ctx, nil)
	if err != nil {
		return err
	}
	j.ctl.pause, j.ctl.paused = pauseNone, true
	j.progress.Status = trainyard.JobPaused
	j.setStatus(ctx, trainyard.JobPaused)
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("PAUSED after step %d of %d", j.done, j.total))
	workflow.GetLogger(ctx).Info("job paused", "JobID", j.id, "Done", j.done)

	pausedAt := workflow.Now(ctx)
	if err := workflow.Await(ctx, func() bool { return j.ctl.resume }); err != nil {
		return err
	}
	// The deadline bounds the time a job spends trying to train, not the
	// time its owner keeps it paused.
	j.pausedFor += workflow.Now(ctx).Sub(pausedAt)
	opts.Summary = fmt.Sprintf("resume at step %d", j.done+1)
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.Resume,
		activities.ResumeInput{JobID: j.id, Step: j.done, TotalSteps: j.total, Seq: seq + 1}).Get(ctx, nil)
	if err != nil {
		return err
	}
	j.ctl.paused, j.ctl.resume = false, false
	j.ctl.pauses++
	j.progress.Status = trainyard.JobRunning
	j.setStatus(ctx, trainyard.JobRunning)
	workflow.GetLogger(ctx).Info("job resumed", "JobID", j.id, "Done", j.done)
	return nil
}

// phase is the phase the progress query reports: the loop's own, or
// pausing/paused.
func (j *job) phase() string {
	switch {
	case j.ctl.paused:
		return PhasePaused
	case j.ctl.pause != pauseNone && !j.progress.Status.Terminal():
		return PhasePausing
	}
	return j.progress.Phase
}
