package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

// updates records the outcome of the updates a test sends.
type updates struct {
	t       *testing.T
	env     *testsuite.TestWorkflowEnvironment
	outcome map[string]string // update id -> "accepted" or the rejection message
}

func newUpdates(t *testing.T, env *testsuite.TestWorkflowEnvironment) *updates {
	return &updates{t: t, env: env, outcome: map[string]string{}}
}

// send sends an update now and records whether it was accepted.
func (u *updates) send(name, id string) {
	u.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
		OnAccept: func() { u.outcome[id] = "accepted" },
		OnReject: func(err error) {
			var appErr *temporal.ApplicationError
			require.True(u.t, errors.As(err, &appErr), "%v", err)
			require.Equal(u.t, ErrInvalidTransition, appErr.Type())
			u.outcome[id] = appErr.Message()
		},
		OnComplete: func(_ any, err error) { require.NoError(u.t, err) },
	})
}

// controlMocks mocks the pause activities, recording their inputs.
func controlMocks(env *testsuite.TestWorkflowEnvironment, pauses *[]activities.PauseInput, resumes *[]activities.ResumeInput) {
	env.OnActivity(a.RequestPause, mock.Anything, activities.RequestPauseInput{JobID: testJobID}).Return(nil).Maybe()
	env.OnActivity(a.Pause, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.PauseInput) error {
		*pauses = append(*pauses, in)
		return nil
	}).Maybe()
	env.OnActivity(a.Resume, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ResumeInput) error {
		*resumes = append(*resumes, in)
		return nil
	}).Maybe()
}

// TestPauseAndResumeAtAStepBoundary: a pause accepted while step 3 trains
// takes effect after it (the Train activity returns at the boundary), the
// job shows PAUSED, holds no activity while paused (an hour here, beyond
// its 30-minute deadline, which paused time does not count), and resume
// continues at exactly step 4. Transitions that make no sense are rejected
// with a reason, and the events the pause adds shift the later sequence
// numbers without a gap.
func TestPauseAndResumeAtAStepBoundary(t *testing.T) {
	env := newEnv(t)
	u := newUpdates(t, env)
	var pauses []activities.PauseInput
	var resumes []activities.ResumeInput
	controlMocks(env, &pauses, &resumes)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{BaseStep: 2}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 6}, nil).Once()
	var trains []activities.TrainInput
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.TrainInput) (*activities.TrainResult, error) {
			trains = append(trains, in)
			return trainBy(1)(ctx, in)
		})
	env.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.CompleteInput) error {
		require.Equal(t, 3, in.CheckpointStep)
		require.Equal(t, 2, in.EventOffset)
		return nil
	}).Once()

	var whilePaused Progress
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in activities.TrainInput
		if info.ActivityType.Name == "Train" && args.Get(&in) == nil && in.Done == 2 {
			u.send(ResumeUpdate, "resume-running")
			u.send(PauseUpdate, "pause")
			u.send(PauseUpdate, "pause-again")
			u.send(ResumeUpdate, "resume-pausing")
		}
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		switch info.ActivityType.Name {
		case "Pause":
			env.RegisterDelayedCallback(func() {
				whilePaused = progressOf(t, env)
				u.send(PauseUpdate, "pause-paused")
				u.send(ResumeUpdate, "resume")
				u.send(ResumeUpdate, "resume-again")
			}, time.Hour)
		}
	})

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID, Options: Options{Deadline: 30 * time.Minute}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	require.Equal(t, "accepted", u.outcome["pause"], "%v", u.outcome)
	require.Equal(t, "accepted", u.outcome["resume"], "%v", u.outcome)
	for id, want := range map[string]string{
		"resume-running": "is RUNNING, not PAUSED",
		"pause-again":    "already pausing",
		"resume-pausing": "resume it once it is PAUSED",
		"pause-paused":   "already PAUSED",
		"resume-again":   "already resuming",
	} {
		require.Contains(t, u.outcome[id], want, id)
	}
	// Paused after step 3 (the step in progress when the pause came), at
	// seq 5 (training_started, three gradient steps, then this).
	require.Equal(t, []activities.PauseInput{{JobID: testJobID, Step: 3, TotalSteps: 6, Seq: 5}}, pauses)
	require.Equal(t, []activities.ResumeInput{{JobID: testJobID, Step: 3, TotalSteps: 6, Seq: 6}}, resumes)
	require.Equal(t, trainyard.JobPaused, whilePaused.Status)
	require.Equal(t, PhasePaused, whilePaused.Phase)
	require.Equal(t, 3, whilePaused.CurrentStep)
	var done, offsets []int
	for _, in := range trains {
		done, offsets = append(done, in.Done), append(offsets, in.EventOffset)
	}
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, done, "resume continues at exactly the next step")
	require.Equal(t, []int{0, 0, 0, 2, 2, 2}, offsets)
	p := progressOf(t, env)
	require.Equal(t, trainyard.JobCompleted, p.Status)
	require.Equal(t, PhaseDone, p.Phase)
}

// TestPausedJobCanBeCancelled: a cancellation while paused closes the job
// as CANCELLED without resuming it.
func TestPausedJobCanBeCancelled(t *testing.T) {
	env := newEnv(t)
	u := newUpdates(t, env)
	var pauses []activities.PauseInput
	var resumes []activities.ResumeInput
	controlMocks(env, &pauses, &resumes)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 4}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1))
	env.OnActivity(a.Fail, mock.Anything, activities.FailInput{JobID: testJobID, Status: trainyard.JobCancelled, Message: "cancelled"}).
		Return(nil).Once()
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in activities.TrainInput
		if info.ActivityType.Name == "Train" && args.Get(&in) == nil && in.Done == 1 {
			u.send(PauseUpdate, "pause")
		}
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == "Pause" {
			env.RegisterDelayedCallback(env.CancelWorkflow, 10*time.Minute)
		}
	})

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.True(t, temporal.IsCanceledError(env.GetWorkflowError()), "%v", env.GetWorkflowError())
	require.Len(t, pauses, 1)
	require.Empty(t, resumes)
	env.AssertActivityNotCalled(t, "Complete", mock.Anything, mock.Anything)
	p := progressOf(t, env)
	require.Equal(t, trainyard.JobCancelled, p.Status)
	require.Equal(t, 2, p.CurrentStep)
}

// TestPauseBeforeTheFirstStep: a pause accepted while the job waits for its
// turn takes effect before the first step; a Train activity that finds the
// request before its first step returns without progress, which is not an
// error.
func TestPauseBeforeTheFirstStep(t *testing.T) {
	env := newEnv(t)
	u := newUpdates(t, env)
	var pauses []activities.PauseInput
	var resumes []activities.ResumeInput
	controlMocks(env, &pauses, &resumes)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{BaseStep: 1}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 2}, nil).Once()
	// The first Train saw the request before stepping (the workflow
	// armed it meanwhile): no progress, paused.
	env.OnActivity(a.Train, mock.Anything, mock.MatchedBy(func(in activities.TrainInput) bool { return in.EventOffset == 0 })).
		Return(&activities.TrainResult{Done: 0, Paused: true}, nil).Maybe()
	env.OnActivity(a.Train, mock.Anything, mock.MatchedBy(func(in activities.TrainInput) bool { return in.EventOffset == 2 })).
		Return(trainBy(1))
	env.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(nil).Once()
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "WaitTurn" {
			u.send(PauseUpdate, "pause")
		}
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == "Pause" {
			env.RegisterDelayedCallback(func() { u.send(ResumeUpdate, "resume") }, time.Minute)
		}
	})
	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, "accepted", u.outcome["pause"])
	require.Equal(t, []activities.PauseInput{{JobID: testJobID, Step: 0, TotalSteps: 2, Seq: 2}}, pauses)
	require.Len(t, resumes, 1)
}

// TestPauseWhileSavingIsRejected: once every step is done there is nothing
// left to pause.
func TestPauseWhileSavingIsRejected(t *testing.T) {
	env := newEnv(t)
	u := newUpdates(t, env)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 1}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1)).Once()
	env.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(nil).Once()
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "Complete" {
			u.send(PauseUpdate, "pause")
		}
	})
	env.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError())
	require.Contains(t, u.outcome["pause"], "saving its checkpoint")
}

// TestPausesCarryAcrossContinueAsNew: the next run knows how many events
// pauses added and how long the job was paused.
func TestPausesCarryAcrossContinueAsNew(t *testing.T) {
	env := newEnv(t)
	u := newUpdates(t, env)
	var pauses []activities.PauseInput
	var resumes []activities.ResumeInput
	controlMocks(env, &pauses, &resumes)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 5}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1))
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in activities.TrainInput
		if info.ActivityType.Name == "Train" && args.Get(&in) == nil && in.Done == 0 {
			u.send(PauseUpdate, "pause")
		}
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == "Pause" {
			env.RegisterDelayedCallback(func() { u.send(ResumeUpdate, "resume") }, 2*time.Hour)
		}
	})
	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID, Options: Options{TrainActivitiesPerRun: 2}})
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	var next SFTJobInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, 1, next.Resume.Pauses)
	require.GreaterOrEqual(t, next.Resume.PausedFor, 2*time.Hour)
	require.Equal(t, 2, next.Resume.Done)

	env2 := newEnv(t)
	next.Options.TrainActivitiesPerRun = 10
	var offsets []int
	env2.OnActivity(a.Train, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.TrainInput) (*activities.TrainResult, error) {
			offsets = append(offsets, in.EventOffset)
			return trainBy(1)(ctx, in)
		})
	env2.OnActivity(a.Complete, mock.Anything, mock.MatchedBy(func(in activities.CompleteInput) bool { return in.EventOffset == 2 })).
		Return(nil).Once()
	env2.ExecuteWorkflow(SFTJob, next)
	require.NoError(t, env2.GetWorkflowError())
	require.Equal(t, []int{2, 2, 2}, offsets)
}

// TestResumeWhilePauseIsRecorded: the job row says PAUSED as soon as the
// Pause activity has written it, before the workflow hears back; a resume
// sent by a client that read it then is accepted, and the job goes on.
func TestResumeWhilePauseIsRecorded(t *testing.T) {
	env := newEnv(t)
	u := newUpdates(t, env)
	var pauses []activities.PauseInput
	var resumes []activities.ResumeInput
	controlMocks(env, &pauses, &resumes)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 3}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1))
	env.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(nil).Once()
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in activities.TrainInput
		switch {
		case info.ActivityType.Name == "Train" && args.Get(&in) == nil && in.Done == 1:
			u.send(PauseUpdate, "pause")
		case info.ActivityType.Name == "Pause":
			u.send(ResumeUpdate, "resume")
		}
	})
	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, "accepted", u.outcome["resume"], "%v", u.outcome)
	require.Len(t, pauses, 1)
	require.Len(t, resumes, 1)
}
