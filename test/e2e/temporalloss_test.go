// Every workflow lost while the worker and the starter keep running. The case runs among the
// disruptive cases, the last of them (disruptive_test.go).

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// testTemporalStateLoss loses every workflow twice while the worker and the starter keep
// running: the in-memory Temporal dev server restarts (a slice change made while it is down),
// then an operator terminates every running workflow (a slice change right after). Each time
// every MultiClusterService converges again within the ensure period plus a few seconds, and
// afterwards cluster health still withdraws a stopped provider after the grace.
func testTemporalStateLoss(t *testing.T) {
	restartStarter(t, "--ensure-period="+testEnsurePeriod.String())
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	// foo: member2 to member3; bar: member2 to member1.
	const bar = "bar"
	deployApp(t, testEnv.Member(m2), ns, app, 2)
	deployApp(t, testEnv.Member(m2), ns, bar, 1)
	createService(t, testEnv.ControlPlane, ns, app)
	createService(t, testEnv.ControlPlane, ns, bar)
	createMCS(t, ns, app, mcsSpec([]string{m2}, []string{m3}))
	createMCS(t, ns, bar, mcsSpec([]string{m2}, []string{m1}))
	mcsIDs := []string{mcs.WorkflowID(ns, app), mcs.WorkflowID(ns, bar)}
	logStateOnFailure(t, mcsIDs...)
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m2: 2})
	expectRemote(t, testEnv.Member(m1), ns, bar, map[string]int{m2: 1})
	c := dialTemporal(t)
	workflowIDs := append([]string{}, mcsIDs...)
	for _, m := range testEnv.Members {
		workflowIDs = append(workflowIDs, clusterhealth.WorkflowID(m.Name), execution.WorkflowID(m.Name))
	}
	before := runningRuns(t, c, workflowIDs...)

	// converged waits until every workflow runs anew, each MultiClusterService's new run has
	// reconciled to Ready, and the consumers hold foo's replicas.
	converged := func(replicas int) {
		t.Helper()
		expectRunningAgain(t, c, testEnsurePeriod+30*time.Second, before)
		expectReady(t, c, mcsIDs...)
		expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m2: replicas})
		expectRemote(t, testEnv.Member(m1), ns, bar, map[string]int{m2: 1})
		before = runningRuns(t, c, workflowIDs...)
	}

	// Temporal restarts in memory; the slice change happens while it is down.
	require.NoError(t, testEnv.StopTemporal())
	stopped := time.Now()
	scale(t, testEnv.Member(m2), ns, app, 3)
	eventually(t, 30*time.Second, func() error {
		if n, err := ownEndpoints(testEnv.Member(m2), ns, app); err != nil || n != 3 {
			return fmt.Errorf("member2 has %d endpoints of %s (%v), want 3", n, app, err)
		}
		return nil
	})
	require.NoError(t, testEnv.StartTemporal(context.Background()))
	up := time.Now()
	converged(3)
	t.Logf("Temporal restarted in memory (down %.1fs): everything converged %.1fs after it served again (--ensure-period %s)",
		up.Sub(stopped).Seconds(), time.Since(up).Seconds(), testEnsurePeriod)

	// Every running workflow is terminated; the slice change follows at once.
	terminated := time.Now()
	n := terminateAllRunning(t, c)
	scale(t, testEnv.Member(m2), ns, app, 1)
	converged(1)
	t.Logf("%d running workflows terminated: everything converged %.1fs later (--ensure-period %s)",
		n, time.Since(terminated).Seconds(), testEnsurePeriod)

	// Cluster health runs again: the stopped provider is withdrawn after the grace.
	t.Cleanup(func() { require.NoError(t, testEnv.StartMemberAPIServer(m2)) })
	stoppedMember := time.Now()
	require.NoError(t, testEnv.StopMemberAPIServer(m2))
	expectClusterReady(t, m2, "False")
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{})
	expectRemote(t, testEnv.Member(m1), ns, bar, map[string]int{})
	require.GreaterOrEqual(t, time.Since(stoppedMember), testUnhealthyGrace, "withdrawn before the grace ran out")
	t.Logf("member2 stopped: withdrawn from the consumers after %.1fs (grace %s)", time.Since(stoppedMember).Seconds(), testUnhealthyGrace)
}

// expectReady waits until each MultiClusterService workflow answers its state query with the
// Ready phase.
func expectReady(t *testing.T, c client.Client, workflowIDs ...string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		for _, id := range workflowIDs {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			value, err := c.QueryWorkflow(ctx, id, "", mcs.QueryState)
			cancel()
			if err != nil {
				return fmt.Errorf("state of %s: %w", id, err)
			}
			var state mcs.State
			if err := value.Get(&state); err != nil {
				return err
			}
			if state.Phase != mcs.PhaseReady {
				return fmt.Errorf("%s is %s", id, state.Phase)
			}
		}
		return nil
	})
}

// terminateAllRunning terminates every running workflow of the namespace, as
// `temporal workflow terminate --query 'ExecutionStatus="Running"'` does, and returns how many.
func terminateAllRunning(t *testing.T, c client.Client) int {
	t.Helper()
	ctx := context.Background()
	var ids []string
	req := &workflowservice.ListWorkflowExecutionsRequest{Query: `ExecutionStatus="Running"`}
	for {
		resp, err := c.ListWorkflow(ctx, req)
		require.NoError(t, err)
		for _, info := range resp.GetExecutions() {
			ids = append(ids, info.GetExecution().GetWorkflowId())
		}
		if len(resp.GetNextPageToken()) == 0 {
			break
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
	for _, id := range ids {
		// A workflow may have ended (or continued as new) since the list: terminate the current run.
		_ = c.TerminateWorkflow(ctx, id, "", "e2e: every running workflow is terminated")
	}
	require.NotEmpty(t, ids)
	return len(ids)
}
