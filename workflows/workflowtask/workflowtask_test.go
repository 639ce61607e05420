package workflowtask

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// boundsAndContinues reports the bounded local activity options, then continues as new.
func boundsAndContinues(ctx workflow.Context) error {
	opts := BoundLocal(ctx, workflow.LocalActivityOptions{ScheduleToCloseTimeout: 30 * time.Second, StartToCloseTimeout: time.Second})
	if err := workflow.SetQueryHandler(ctx, "bounds", func() ([]time.Duration, error) {
		return []time.Duration{opts.ScheduleToCloseTimeout, opts.StartToCloseTimeout}, nil
	}); err != nil {
		return err
	}
	return ContinueAsNew(ctx, boundsAndContinues)
}

func run(t *testing.T, taskTimeout time.Duration) ([]time.Duration, *workflow.ContinueAsNewError) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(boundsAndContinues)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{WorkflowTaskTimeout: taskTimeout})
	env.ExecuteWorkflow(boundsAndContinues)
	var bounds []time.Duration
	v, err := env.QueryWorkflow("bounds")
	require.NoError(t, err)
	require.NoError(t, v.Get(&bounds))
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "the workflow continued as new: %v", env.GetWorkflowError())
	return bounds, can
}

func TestLocalActivitiesAreBoundedByTheirTask(t *testing.T) {
	SetContinuedRunTimeout(0)
	bounds, _ := run(t, 2*time.Second)
	assert.Equal(t, []time.Duration{1500 * time.Millisecond, time.Second}, bounds,
		"schedule-to-close cut to 75% of the 2 s task; a shorter start-to-close kept")
}

func TestContinuedRunsTakeTheConfiguredTaskTimeout(t *testing.T) {
	SetContinuedRunTimeout(0)
	_, can := run(t, 2*time.Second)
	assert.Equal(t, 2*time.Second, can.WorkflowTaskTimeout, "without a setting, the run's own")

	SetContinuedRunTimeout(5 * time.Second)
	defer SetContinuedRunTimeout(0)
	_, can = run(t, 2*time.Second)
	assert.Equal(t, 5*time.Second, can.WorkflowTaskTimeout, "the worker's --workflow-task-timeout")
}

func TestContinuedRunsMoveToTheirTypesQueue(t *testing.T) {
	SetContinuedRunQueues(nil)
	_, can := run(t, 2*time.Second)
	assert.Equal(t, "default-test-taskqueue", can.TaskQueueName, "without a setting, the run's own")

	SetContinuedRunQueues(map[string]string{"other": "other-queue"})
	_, can = run(t, 2*time.Second)
	assert.Equal(t, "default-test-taskqueue", can.TaskQueueName, "a type without a queue keeps the run's own")

	SetContinuedRunQueues(map[string]string{"boundsAndContinues": "karmadaflow-test"})
	defer SetContinuedRunQueues(nil)
	_, can = run(t, 2*time.Second)
	assert.Equal(t, "karmadaflow-test", can.TaskQueueName)
}
