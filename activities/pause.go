package activities

import (
	"context"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
)

// Pause and resume (see workflows/control.go): the workflow records a pause
// request in the job row, where Train reads it between steps; once Train has
// stopped at a step boundary with its state stored, Pause records PAUSED and
// training_paused; Resume records RUNNING and training_resumed. Events are
// written at sequence numbers the workflow computes, so a retried activity
// writes each once.

// RequestPause flags the job for its Train activity, which stops after the
// step in progress.
func (a *Activities) RequestPause(ctx context.Context, in RequestPauseInput) error {
	if _, err := a.activeJob(ctx, in.JobID); err != nil {
		return err
	}
	yes := true
	return classify(a.d.Jobs.UpdateJob(ctx, in.JobID, trainyard.JobUpdate{PauseRequested: &yes}), "record the pause request")
}

// Pause records that the job is PAUSED after in.Step steps (clearing its
// pause request) and appends training_paused {step, total_steps}.
func (a *Activities) Pause(ctx context.Context, in PauseInput) error {
	if _, err := a.activeJob(ctx, in.JobID); err != nil {
		return err
	}
	data := map[string]any{"step": in.Step, "total_steps": in.TotalSteps}
	if err := a.appendControl(ctx, in.JobID, in.Seq, trainyard.EventTrainingPaused, data); err != nil {
		return err
	}
	paused, no := trainyard.JobPaused, false
	err := a.d.Jobs.UpdateJob(ctx, in.JobID, trainyard.JobUpdate{Status: &paused, PauseRequested: &no, CurrentStep: &in.Step})
	if err != nil {
		return classify(err, "mark the job paused")
	}
	a.d.Logger.Info("job paused", zap.String("job_id", in.JobID), zap.Int("step", in.Step), zap.Int("total_steps", in.TotalSteps))
	return nil
}

// Resume records that the paused job is RUNNING again and appends
// training_resumed {step, total_steps}, step being the last one done.
func (a *Activities) Resume(ctx context.Context, in ResumeInput) error {
	if _, err := a.activeJob(ctx, in.JobID); err != nil {
		return err
	}
	data := map[string]any{"step": in.Step, "total_steps": in.TotalSteps}
	if err := a.appendControl(ctx, in.JobID, in.Seq, trainyard.EventTrainingResumed, data); err != nil {
		return err
	}
	running, no := trainyard.JobRunning, false
	if err := a.d.Jobs.UpdateJob(ctx, in.JobID, trainyard.JobUpdate{Status: &running, PauseRequested: &no}); err != nil {
		return classify(err, "mark the job running")
	}
	a.d.Logger.Info("job resumed", zap.String("job_id", in.JobID), zap.Int("step", in.Step), zap.Int("total_steps", in.TotalSteps))
	return nil
}

// appendControl writes a pause or resume event at seq; a retry finds its
// first write, a closed job is gone.
func (a *Activities) appendControl(ctx context.Context, jobID string, seq int, typ trainyard.EventType, data map[string]any) error {
	stored, err := a.d.Events.AppendEvent(ctx, &trainyard.Event{JobID: jobID, Seq: seq, Type: typ, Data: data})
	switch {
	case isCode(err, trainyard.ECONFLICT):
		return gone(err, "job %s was closed while it paused or resumed", jobID)
	case err != nil:
		return classify(err, "record "+string(typ))
	case stored.Type != typ:
		return invalidf("internal error: event %d of job %s is a %s, not %s", seq, jobID, stored.Type, typ)
	}
	return nil
}

// pauseRequested reads the job's pause request (Train, between steps).
func (a *Activities) pauseRequested(ctx context.Context, jobID string) (bool, error) {
	job, err := a.d.Jobs.GetJob(ctx, jobID)
	if err != nil {
		return false, classify(err, "read the job's pause request")
	}
	if job.Status.Terminal() {
		return false, gone(nil, "job %s is already %s", job.ID, job.Status)
	}
	return job.PauseRequested, nil
}
