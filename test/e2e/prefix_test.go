package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// TestSecondInstallationSharesTheNamespace: a second installation (its own worker and starter,
// task queue "second" and workflow-ID prefix "second/") in the same Temporal namespace runs a
// workflow of its own for each object, on its own capability's task queue, beside the first
// one's.
func TestSecondInstallationSharesTheNamespace(t *testing.T) {
	ctx := context.Background()
	second := []string{"--task-queue", "second", "--workflow-id-prefix", "second/"}
	c := dialTemporal(t)
	// Cleanups run last added first: the second installation's workflows are terminated once its
	// starter, which would start them again, has stopped. A run left behind never runs its first
	// task, and counts as a run on no GetVersion branch (TestVersionsCountsRunningWorkflowsPerChange).
	t.Cleanup(func() {
		for _, queue := range capabilityQueues("second") {
			terminateTaskQueue(t, queue)
		}
	})
	require.NoError(t, svc.StartInstance(ctx, "worker-second", second))
	t.Cleanup(func() { svc.StopInstance("worker-second") })
	require.NoError(t, svc.StartInstance(ctx, "starter-second", append(second, "--ensure-period", "2s")))
	t.Cleanup(func() { svc.StopInstance("starter-second") })

	ns, _, m2 := exposeToMember2(t)
	for _, w := range []struct{ id, capability string }{{mcs.WorkflowID(ns, app), naming.CapabilityMCS}, {execution.WorkflowID(m2), naming.CapabilityCluster}} {
		id := w.id
		eventually(t, 30*time.Second, func() error {
			for _, want := range []struct{ id, taskQueue string }{
				{id, naming.CapabilityTaskQueue("karmadaflow", w.capability)},
				{"second/" + id, naming.CapabilityTaskQueue("second", w.capability)},
			} {
				d, err := c.DescribeWorkflowExecution(ctx, want.id, "")
				if err != nil {
					return err
				}
				if got := d.GetExecutionConfig().GetTaskQueue().GetName(); got != want.taskQueue {
					return fmt.Errorf("%s runs on task queue %q, want %q", want.id, got, want.taskQueue)
				}
			}
			return nil
		})
	}
}

// terminateTaskQueue ends every running workflow of a task queue.
func terminateTaskQueue(t *testing.T, taskQueue string) {
	c := dialTemporal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("TaskQueue = %q AND ExecutionStatus = 'Running'", taskQueue),
	})
	require.NoError(t, err)
	for _, w := range resp.GetExecutions() {
		require.NoError(t, c.TerminateWorkflow(ctx, w.GetExecution().GetWorkflowId(), "", "test ends"))
	}
}
