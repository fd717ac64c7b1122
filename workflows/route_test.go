package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard/activities"
)

func TestBaseTaskQueueNames(t *testing.T) {
	require.Equal(t, "q-compute-base-tiny.chat_v1-2", BaseTaskQueue("q", "tiny.chat_v1-2"))
	a, b := BaseTaskQueue("q", "org/model"), BaseTaskQueue("q", "org_model")
	require.NotEqual(t, a, b, "names that differ only in replaced characters must not share a queue")
	require.Regexp(t, `^q-compute-base-org_model-[0-9a-f]{8}$`, a)
	require.Equal(t, "q-compute-worker-w1", WorkerTaskQueue("q", "w1"))
}

// TestChunksFollowTheWorkerHoldingTheState checks the routing of a job's
// compute: Prepare on its base model's queue, each Train chunk on the own
// queue of the worker that ran the one before, and, when that worker does
// not pick a chunk up, the chunk on the base model's queue again.
func TestChunksFollowTheWorkerHoldingTheState(t *testing.T) {
	env := newEnv(t)
	baseQ := BaseTaskQueue(testQueue, testBase)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.PrepareInput) (*activities.PrepareResult, error) {
			require.Equal(t, baseQ, activity.GetInfo(ctx).TaskQueue)
			return &activities.PrepareResult{TotalSteps: 4, WorkerQueue: "w1"}, nil
		}).Once()
	var queues []string
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.TrainInput) (*activities.TrainResult, error) {
			q := activity.GetInfo(ctx).TaskQueue
			queues = append(queues, q)
			if len(queues) == 2 { // w1 died: its chunk is never started
				return nil, temporal.NewTimeoutError(0, nil)
			}
			r, err := trainBy(1)(ctx, in)
			if q == baseQ {
				r.WorkerQueue = "w2"
			} else {
				r.WorkerQueue = q
			}
			return r, err
		})
	env.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"w1", "w1", baseQ, "w2", "w2"}, queues)
}

// TestNonRetryableChunkFailureDoesNotMove: bad input fails the job where it
// is; moving it would only fail it again.
func TestNonRetryableChunkFailureDoesNotMove(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	env.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(&activities.PrepareResult{TotalSteps: 4, WorkerQueue: "w1"}, nil).Once()
	env.OnActivity(a.Train, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError("gradient step 1: loss is NaN", activities.ErrNonFinite, nil)).Once()
	env.OnActivity(a.Fail, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(SFTJob, SFTJobInput{JobID: testJobID})
	require.Error(t, env.GetWorkflowError())
}

// TestJobWaitsWhileNoWorkerHoldsItsBaseModel: Place fails, retryably, until
// a holder appears; nothing is prepared meanwhile.
func TestJobWaitsWhileNoWorkerHoldsItsBaseModel(t *testing.T) {
	s := newEnvWithoutPlace(t)
	attempts := 0
	s.OnActivity(a.WaitTurn, mock.Anything, mock.Anything).Return(&activities.WaitTurnResult{}, nil).Once()
	s.OnActivity(a.Place, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PlaceInput) (*activities.PlaceResult, error) {
			if attempts++; attempts < 4 {
				return nil, temporal.NewApplicationError("no running worker holds the base model", activities.ErrNoWorker)
			}
			return &activities.PlaceResult{BaseModel: "acme/llama"}, nil
		})
	s.OnActivity(a.Prepare, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.PrepareInput) (*activities.PrepareResult, error) {
			require.Equal(t, BaseTaskQueue(testQueue, "acme/llama"), activity.GetInfo(ctx).TaskQueue)
			return &activities.PrepareResult{TotalSteps: 1}, nil
		}).Once()
	s.OnActivity(a.Train, mock.Anything, mock.Anything).Return(trainBy(1)).Once()
	s.OnActivity(a.Complete, mock.Anything, mock.Anything).Return(nil).Once()

	s.ExecuteWorkflow(RLJob, RLJobInput{JobID: testJobID})
	require.NoError(t, s.GetWorkflowError())
	require.Equal(t, 4, attempts)
}
