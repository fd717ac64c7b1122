package main

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/workflows"
)

// healthChecks are the probes of /v1/system-check: the database, the blob
// store, Temporal itself, and one per task queue the job workflows need a
// worker on. This is the one place the Temporal probes are defined.
func healthChecks(inf *infra, taskQueue string) []api.HealthCheck {
	return []api.HealthCheck{
		{Name: "database", Check: inf.db.Ping},
		{Name: "storage", Check: inf.blobs.Ping},
		{Name: "temporal", Check: temporalHealth(inf.temporal)},
		{Name: "queue:" + taskQueue, Check: pollersPresent(inf.temporal, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)},
		{Name: "queue:" + workflows.ComputeTaskQueue(taskQueue),
			Check: pollersPresent(inf.temporal, workflows.ComputeTaskQueue(taskQueue), enumspb.TASK_QUEUE_TYPE_ACTIVITY)},
		{Name: "queue:" + workflows.FetchTaskQueue(taskQueue),
			Check: pollersPresent(inf.temporal, workflows.FetchTaskQueue(taskQueue), enumspb.TASK_QUEUE_TYPE_ACTIVITY)},
	}
}

// temporalHealth asks the frontend's gRPC health service.
func temporalHealth(c client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("temporal frontend: %w", err)
		}
		return nil
	}
}

// errNoPollers is reported when Temporal is up but no worker polls a queue:
// jobs would be accepted and then wait forever. A trainyard error without a
// cause, so /v1/system-check may show its text to a caller without a key.
var errNoPollers error = trainyard.Errorf(trainyard.EUNAVAILABLE, "no worker is polling this task queue")

// pollersPresent succeeds when at least one worker polled the queue
// recently. Temporal forgets pollers about a minute after their last poll,
// so a stopped worker turns this check red within that time.
func pollersPresent(c client.Client, queue string, typ enumspb.TaskQueueType) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := c.DescribeTaskQueue(ctx, queue, typ)
		if err != nil {
			return fmt.Errorf("describe task queue %s: %w", queue, err)
		}
		if len(resp.GetPollers()) == 0 {
			return errNoPollers
		}
		return nil
	}
}
