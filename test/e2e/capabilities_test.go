package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// TestStarterStartsOnlyWhatWorkersPoll runs a second installation (task queue base "pollers",
// workflow-ID prefix "pollers/") whose starter comes first: while no worker polls the
// per-cluster task queue, it starts no member's Work execution workflow, and says so in
// karmadaflow_task_queue_pollers; once a worker for it comes, the ensure loop starts them on
// pollers-cluster. Standalone only: beside Karmada the starter runs no per-cluster work.
func TestStarterStartsOnlyWhatWorkersPoll(t *testing.T) {
	standaloneOnly(t)
	ctx := context.Background()
	const base, prefix = "pollers", "pollers/"
	flags := []string{"--task-queue", base, "--workflow-id-prefix", prefix}
	c := dialTemporal(t)
	m1, _, _ := members(t)
	id := prefix + execution.WorkflowID(m1)
	clusterQueue := naming.CapabilityTaskQueue(base, naming.CapabilityCluster)
	// Cleanups run last added first: the workflows go once the starter, which would start them
	// again, has stopped.
	t.Cleanup(func() {
		for _, queue := range append([]string{base}, capabilityQueues(base)...) {
			terminateTaskQueue(t, queue)
		}
	})
	require.NoError(t, svc.StartInstance(ctx, "starter-pollers", append(flags, "--ensure-period", "2s")))
	t.Cleanup(func() { svc.StopInstance("starter-pollers") })

	eventually(t, 30*time.Second, func() error {
		if n, ok := pollersGauge(t, "starter-pollers", clusterQueue); !ok || n != 0 {
			return fmt.Errorf("karmadaflow_task_queue_pollers of %s: %v (present: %v), want 0", clusterQueue, n, ok)
		}
		return nil
	})
	time.Sleep(5 * time.Second) // two more ensure passes
	_, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "%s was started while no worker polls %s", id, clusterQueue)

	require.NoError(t, svc.StartInstance(ctx, "worker-pollers", flags))
	t.Cleanup(func() { svc.StopInstance("worker-pollers") })
	// The worker is seen at the starter's next question to Temporal (its answers live 10 s).
	eventually(t, 45*time.Second, func() error {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return err
		}
		if got := d.GetExecutionConfig().GetTaskQueue().GetName(); got != clusterQueue {
			return fmt.Errorf("%s runs on task queue %q, want %q", id, got, clusterQueue)
		}
		return nil
	})
	if n, _ := pollersGauge(t, "starter-pollers", clusterQueue); n < 1 {
		t.Errorf("karmadaflow_task_queue_pollers of %s is %v once a worker polls it", clusterQueue, n)
	}
}

// TestRunOnTheBaseQueueMovesToItsCapabilitysQueue: a MultiClusterService's run on the base
// task queue, as every run was before the capabilities had queues of their own, is served by
// the worker there, and its next run, after a continue-as-new, is on the MultiClusterService's
// queue, and keeps working.
func TestRunOnTheBaseQueueMovesToItsCapabilitysQueue(t *testing.T) {
	ctx := context.Background()
	ns, m1, m2 := exposeToMember2(t)
	c := dialTemporal(t)
	id := mcs.WorkflowID(ns, app)
	// The starter keeps it there: a run on the base queue counts as running.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "karmadaflow",
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING},
		mcs.WorkflowName, mcs.Input{Namespace: ns, Name: app})
	require.NoError(t, err)
	scale(t, testEnv.Member(m1), ns, app, 2)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "the run on the base queue did the work")
	require.Equal(t, "karmadaflow", d.GetExecutionConfig().GetTaskQueue().GetName())

	require.NoError(t, c.SignalWorkflow(ctx, id, "", mcs.SignalResync, mcs.ResyncRequest{ContinueAsNew: true}))
	want := naming.CapabilityTaskQueue("karmadaflow", naming.CapabilityMCS)
	eventually(t, 30*time.Second, func() error {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return err
		}
		if d.GetWorkflowExecutionInfo().GetExecution().GetRunId() == run.GetRunID() {
			return errors.New("the run on the base queue has not continued as new")
		}
		if got := d.GetExecutionConfig().GetTaskQueue().GetName(); got != want {
			return fmt.Errorf("the continued run is on task queue %q, want %q", got, want)
		}
		return nil
	})
	scale(t, testEnv.Member(m1), ns, app, 1)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
}

// capabilityQueues are the task queues of every capability of base.
func capabilityQueues(base string) []string {
	var queues []string
	for _, c := range naming.Capabilities {
		queues = append(queues, naming.CapabilityTaskQueue(base, c))
	}
	return queues
}

// pollersGauge is karmadaflow_task_queue_pollers of taskQueue on instance's /metrics; ok is
// false when the instance has not set it.
func pollersGauge(t *testing.T, instance, taskQueue string) (float64, bool) {
	t.Helper()
	return metricValue(t, instance, `karmadaflow_task_queue_pollers{task_queue="`+taskQueue+`"}`)
}
