package workflows

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
)

const testJobID = "0190f5f0-0000-7000-8000-000000000001"

// testBase is the base model of the tests' jobs.
const testBase = "trainyard/tiny-chat"

// testQueue is the task queue of workflows in the SDK's test environment.
const testQueue = "default-test-taskqueue"

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := newEnvWithoutPlace(t)
	// Jobs find where their base model is held before they prepare.
	env.OnActivity(a.Place, mock.Anything, mock.Anything).Return(&activities.PlaceResult{BaseModel: testBase}, nil).Maybe()
	return env
}

// newEnvWithoutPlace is newEnv for tests that mock Place themselves.
func newEnvWithoutPlace(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(RLJob)
	env.RegisterWorkflow(SFTJob)
	env.RegisterActivity(&activities.Activities{})
	// SFT jobs copy their data in first; tests about other phases need
	// not say so.
	env.OnActivity(a.Fetch, mock.Anything, mock.Anything).Return(&activities.FetchResult{}, nil).Maybe()
	// Every job ends with its model's retention.
	env.OnActivity(a.ApplyRetention, mock.Anything, activities.RetentionInput{JobID: testJobID}).
		Return(&activities.RetentionResult{}, nil).Maybe()
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// trainBy mocks Train as completing n steps per call.
func trainBy(n int) func(context.Context, activities.TrainInput) (*activities.TrainResult, error) {
	return func(_ context.Context, in activities.TrainInput) (*activities.TrainResult, error) {
		done := min(in.Done+n, in.TotalSteps)
		return &activities.TrainResult{Done: done, Metrics: map[string]float64{"loss": 1 / float64(done)}}, nil
	}
}

func progressOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) Progress {
	t.Helper()
	v, err := env.QueryWorkflow(ProgressQuery)
	require.NoError(t, err)
	var p Progress
	require.NoError(t, v.Get(&p))
	return p
}

func TestRLJobHappyPath(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, activities.WaitTurnInput{JobID: testJobID}).
		Return(&activities.WaitTurnResult{BaseStep: 3}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, activities.PrepareInput{JobID: testJobID, Kind: trainyard.JobKindRL, BaseStep: 3}).
		Return(&activities.PrepareResult{TotalSteps: 1, NumExamples: 8}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, activities.TrainInput{JobID: testJobID, BaseStep: 3, Done: 0, TotalSteps: 1}).
		Return(&activities.TrainResult{Done: 1, Metrics: map[string]float64{"loss": 0.5}}, nil).Once()
	env.OnActivity(a.Complete, mock.Anything, activities.CompleteInput{
		JobID: testJobID, CheckpointStep: 4, TotalSteps: 1, Metrics: map[string]float64{"loss": 0.5},
	}).Return(nil).Once()

	env.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res JobResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, JobResult{JobID: testJobID, CheckpointStep: 4, Steps: 1, Metrics: map[string]float64{"loss": 0.5}}, res)

	p := progressOf(t, env)
	require.Equal(t, trainyard.JobCompleted, p.Status)
	require.Equal(t, PhaseDone, p.Phase)
	require.Equal(t, 4, p.CheckpointStep)
	require.Equal(t, 1, p.CurrentStep)
}

func TestSFTJobRunsStepsInChunksAndReportsProgress(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 5}, nil).Once()
	var seen []int
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.TrainInput) (*activities.TrainResult, error) {
			seen = append(seen, in.Done)
			return trainBy(2)(ctx, in)
		}).Times(3)
	env.OnActivity(a.Complete, mock.Anything, mock.MatchedBy(func(in activities.CompleteInput) bool {
		return in.CheckpointStep == 1 && in.TotalSteps == 5 && in.Metrics["loss"] == 0.2
	})).Return(nil).Once()
	var mid Progress
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == "Train" && mid.CurrentStep == 0 {
			mid = progressOf(t, env)
		}
	})

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int{0, 2, 4}, seen)
	require.Equal(t, trainyard.JobRunning, mid.Status)
	require.Equal(t, PhaseTraining, mid.Phase)
	require.Equal(t, 5, mid.TotalSteps)
	require.Equal(t, 2, mid.CurrentStep)
}

func TestJobFailureRecordsTrainingFailed(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{BaseStep: 1}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError("training data line 3 has no assistant message to train on", activities.ErrInvalidInput, nil)).Once()
	env.OnActivity(a.Fail, mock.Anything, activities.FailInput{
		JobID: testJobID, Status: trainyard.JobFailed, Message: "training data line 3 has no assistant message to train on",
	}).Return(nil).Once()

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, activities.ErrInvalidInput, appErr.Type())
	env.AssertActivityNotCalled(t, "Train", mock.Anything, mock.Anything)
	p := progressOf(t, env)
	require.Equal(t, trainyard.JobFailed, p.Status)
	require.Contains(t, p.Error, "line 3")
}

func TestNonFiniteLossFailsWithoutRetry(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 3}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError("gradient step 1: the loss is not finite", activities.ErrNonFinite, nil)).Once()
	env.OnActivity(a.Fail, mock.Anything, mock.MatchedBy(func(in activities.FailInput) bool {
		return in.Status == trainyard.JobFailed && in.Message == "gradient step 1: the loss is not finite"
	})).Return(nil).Once()

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.Error(t, env.GetWorkflowError())
}

func TestRetryableStepErrorIsRetried(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 1}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(nil, errors.New("s3: connection reset")).Twice()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1)).Once()
	env.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError())
}

func TestCancelRecordsCancelled(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 10}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1)).Times(3)
	// The fourth chunk runs until it is cancelled. (Maybe: the test
	// environment may deliver the cancellation before it calls the mock.)
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.TrainInput) (*activities.TrainResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}).Maybe()
	env.OnActivity(a.Fail, mock.Anything, activities.FailInput{JobID: testJobID, Status: trainyard.JobCancelled, Message: "cancelled"}).
		Return(nil).Once()
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in activities.TrainInput
		if info.ActivityType.Name == "Train" && args.Get(&in) == nil && in.Done == 3 {
			env.CancelWorkflow()
		}
	})

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.True(t, temporal.IsCanceledError(env.GetWorkflowError()), "%v", env.GetWorkflowError())
	env.AssertActivityNotCalled(t, "Complete", mock.Anything, mock.Anything)
	p := progressOf(t, env)
	require.Equal(t, trainyard.JobCancelled, p.Status)
	require.Equal(t, 3, p.CurrentStep)
}

func TestCancelWhileWaitingForTurn(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.WaitTurnInput) (*activities.WaitTurnResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}).Maybe() // the cancellation may come before the mock is called
	env.OnActivity(a.Fail, mock.Anything, activities.FailInput{JobID: testJobID, Status: trainyard.JobCancelled, Message: "cancelled"}).
		Return(nil).Once()
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "WaitTurn" {
			env.CancelWorkflow()
		}
	})

	env.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID})
	require.True(t, temporal.IsCanceledError(env.GetWorkflowError()))
	env.AssertActivityNotCalled(t, "Prepare", mock.Anything, mock.Anything)
}

func TestFinishedJobDoesNothing(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{Finished: true}, nil).Once()

	env.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError())
	env.AssertActivityNotCalled(t, "Prepare", mock.Anything, mock.Anything)
	env.AssertActivityNotCalled(t, "Fail", mock.Anything, mock.Anything)
}

func TestTrainWithoutProgressFailsTheJob(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 2}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(&activities.TrainResult{Done: 0}, nil).Once()
	env.OnActivity(a.Fail, mock.Anything, mock.MatchedBy(func(in activities.FailInput) bool {
		return in.Status == trainyard.JobFailed && in.Message != ""
	})).Return(nil).Once()

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.Error(t, env.GetWorkflowError())
}

func TestSFTJobContinuesAsNewAndResumes(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{BaseStep: 7}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 5}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1)).Twice()
	opts := Options{TrainActivitiesPerRun: 2}

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID, Options: opts})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "%v", err)
	require.Equal(t, "SFTJob", can.WorkflowType.Name)
	var next SFTJobInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.False(t, next.Resume.StartedAt.IsZero(), "the deadline's start must carry over")
	next.Resume.StartedAt = time.Time{}
	require.Equal(t, &Resume{BaseStep: 7, TotalSteps: 5, Done: 2, Metrics: map[string]float64{"loss": 0.5}, BaseModel: testBase}, next.Resume)
	require.Equal(t, 2, next.Options.TrainActivitiesPerRun)

	// The next run starts where the first stopped: no WaitTurn, no Prepare.
	env2 := newEnv(t)
	var seen []int
	env2.OnActivity(a.Train, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.TrainInput) (*activities.TrainResult, error) {
			seen = append(seen, in.Done)
			return trainBy(2)(ctx, in)
		}).Twice()
	env2.OnActivity(a.Complete, mock.Anything, mock.MatchedBy(func(in activities.CompleteInput) bool {
		return in.CheckpointStep == 8 && in.TotalSteps == 5
	})).Return(nil).Once()
	env2.ExecuteWorkflow(SFTJob, next)
	require.NoError(t, env2.GetWorkflowError())
	require.Equal(t, []int{2, 4}, seen)
	env2.AssertActivityNotCalled(t, "WaitTurn", mock.Anything, mock.Anything)
	env2.AssertActivityNotCalled(t, "Prepare", mock.Anything, mock.Anything)
}

func TestContinueAsNewWhenTemporalSuggestsIt(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 5}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1)).Once()
	env.SetContinueAsNewSuggested(true)

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.True(t, workflow.IsContinueAsNewError(env.GetWorkflowError()))
}

// TestSFTJobFetchesOnItsOwnQueueBeforeItsTurn: the data is copied in by
// Fetch on the fetch task queue, before WaitTurn, so a slow server holds no
// training slot and no turn on the model; a failed fetch fails the job.
func TestSFTJobFetchesOnItsOwnQueueBeforeItsTurn(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SFTJob)
	env.RegisterActivity(&activities.Activities{})
	var order []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		order = append(order, info.ActivityType.Name+"@"+info.TaskQueue)
	})
	env.OnActivity(a.Fetch, mock.Anything, activities.FetchInput{JobID: testJobID}).
		Return(nil, temporal.NewNonRetryableApplicationError("training_data_url answered HTTP 404", activities.ErrInvalidInput, nil)).Once()
	env.OnActivity(a.Fail, mock.Anything, activities.FailInput{JobID: testJobID, Status: trainyard.JobFailed,
		Message: "training_data_url answered HTTP 404"}).Return(nil).Once()
	env.OnActivity(a.ApplyRetention, mock.Anything, mock.Anything).Return(&activities.RetentionResult{}, nil).Once()
	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.Error(t, env.GetWorkflowError())
	require.Equal(t, []string{"Fetch@" + FetchTaskQueue(testQueue), "Fail@" + testQueue, "ApplyRetention@" + testQueue}, order)
	env.AssertExpectations(t)
	env.AssertActivityNotCalled(t, "WaitTurn", mock.Anything, mock.Anything)
}

// TestOutagesDelayJobsUntilTheirDeadline: Prepare and Train failing with
// errors of the platform's own (a database down for a long while) are
// retried with capped backoff, not a fixed number of times, so the job
// completes once the outage is over; only the job's deadline ends the
// retries, with a message that says so.
func TestOutagesDelayJobsUntilTheirDeadline(t *testing.T) {
	outage := temporal.NewApplicationError("record the step: database unavailable", activities.ErrInfrastructure)
	prepares, trains := 0, 0
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PrepareInput) (*activities.PrepareResult, error) {
			if prepares++; prepares <= 8 { // the test environment caps attempts at 10
				return nil, outage
			}
			return &activities.PrepareResult{TotalSteps: 1}, nil
		})
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.TrainInput) (*activities.TrainResult, error) {
			if trains++; trains <= 8 {
				return nil, outage
			}
			return trainBy(1)(ctx, in)
		})
	env.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(nil).Once()
	env.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError(), "after %d Prepare attempts", prepares)
	require.Equal(t, 9, prepares)
	require.Equal(t, 9, trains)
	// On a real server the attempts are not counted at all: the job's
	// deadline is the only bound.
	for _, o := range []workflow.ActivityOptions{prepareOptions(Options{}, "q", time.Hour), trainOptions(Options{}, "q", time.Hour)} {
		require.Zero(t, o.RetryPolicy.MaximumAttempts)
		require.Equal(t, time.Hour, o.ScheduleToCloseTimeout)
		require.Equal(t, time.Minute, o.RetryPolicy.MaximumInterval)
	}

	stuck := newEnv(t)
	stuck.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	stuck.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PrepareInput) (*activities.PrepareResult, error) { return nil, outage })
	stuck.OnActivity(a.Fail, mock.Anything, mock.MatchedBy(func(in activities.FailInput) bool {
		return in.Status == trainyard.JobFailed && strings.Contains(in.Message, "database unavailable")
	})).Return(nil).Once()
	stuck.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID, Options: Options{Deadline: time.Hour}})
	require.Error(t, stuck.GetWorkflowError())
}
