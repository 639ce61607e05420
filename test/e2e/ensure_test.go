package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/karmadaflow/karmadaflow/starter/ensure"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// testEnsurePeriod is the starter's --ensure-period in the tests of the ensure loop.
const testEnsurePeriod = 5 * time.Second

// restartStarter restarts the service's starter with extra flags for the rest of the test,
// and with the usual ones after it.
func restartStarter(t *testing.T, args ...string) {
	t.Helper()
	require.NoError(t, svc.StartInstance(context.Background(), "starter", args))
	t.Cleanup(func() { require.NoError(t, svc.StartInstance(context.Background(), "starter", nil)) })
}

func dialTemporal(t *testing.T) client.Client {
	t.Helper()
	c, err := testEnv.Temporal.Dial(context.Background())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// runningRun is the run ID of the workflow's running run; "" when none runs.
func runningRun(c client.Client, workflowID string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if info := d.GetWorkflowExecutionInfo(); info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return info.GetExecution().GetRunId(), nil
	}
	return "", nil
}

// runningRuns are the running runs of the workflows, by workflow ID; each must be running.
func runningRuns(t *testing.T, c client.Client, workflowIDs ...string) map[string]string {
	t.Helper()
	runs := map[string]string{}
	for _, id := range workflowIDs {
		eventually(t, 30*time.Second, func() error {
			run, err := runningRun(c, id)
			if err == nil && run == "" {
				err = fmt.Errorf("%s is not running", id)
			}
			runs[id] = run
			return err
		})
	}
	return runs
}

// expectRunningAgain waits until every workflow of before runs again in a run of its own.
func expectRunningAgain(t *testing.T, c client.Client, timeout time.Duration, before map[string]string) {
	t.Helper()
	eventually(t, timeout, func() error {
		for id, old := range before {
			run, err := runningRun(c, id)
			if err != nil {
				return err
			}
			if run == "" || run == old {
				return fmt.Errorf("%s is not running in a new run", id)
			}
		}
		return nil
	})
}

func terminate(t *testing.T, c client.Client, workflowIDs ...string) {
	t.Helper()
	for _, id := range workflowIDs {
		require.NoError(t, c.TerminateWorkflow(context.Background(), id, "", "e2e: a workflow that is gone"))
	}
}

// startedTotal reads karmadaflow_workflows_started_total{kind,reason} of a starter instance.
func startedTotal(t *testing.T, instance, kind, reason string) float64 {
	t.Helper()
	v, _ := metricValue(t, instance, `karmadaflow_workflows_started_total{kind="`+kind+`",reason="`+reason+`"}`)
	return v
}

// metricValue is the value of series (name and labels) on instance's /metrics; ok is false
// when the instance does not serve it.
func metricValue(t *testing.T, instance, series string) (v float64, ok bool) {
	t.Helper()
	_, body := httpGet(t, "http://"+svc.MetricsAddress(instance)+"/metrics")
	return seriesValue(t, body, series)
}

// seriesValue is the value of series (name and labels) in a /metrics body; ok is false when
// the body has none.
func seriesValue(t *testing.T, body, series string) (v float64, ok bool) {
	t.Helper()
	for line := range strings.Lines(body) {
		if value, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			require.NoError(t, err)
			return v, true
		}
	}
	return 0, false
}

// exposeToMember2 runs the app with one replica on member1, exposed to member2 by a
// MultiClusterService in a namespace of the test's own, and waits until member2 holds it.
func exposeToMember2(t *testing.T) (ns, m1, m2 string) {
	t.Helper()
	ns = testNamespace(t)
	m1, m2, _ = members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	logStateOnFailure(t, mcs.WorkflowID(ns, app))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
	return ns, m1, m2
}

// TestEnsureStartsTerminatedWorkflows: workflows an operator terminated (a MultiClusterService's,
// a Cluster's health probing, a member's Work execution) run again within the ensure period,
// and the MultiClusterService keeps working.
func TestEnsureStartsTerminatedWorkflows(t *testing.T) {
	restartStarter(t, "--ensure-period="+testEnsurePeriod.String())
	ns, m1, m2 := exposeToMember2(t)

	c := dialTemporal(t)
	before := runningRuns(t, c, mcs.WorkflowID(ns, app), clusterhealth.WorkflowID(m1), execution.WorkflowID(m2))
	healthStarts := startedTotal(t, "starter", "Cluster", ensure.ReasonNotRunning)
	terminated := time.Now()
	terminate(t, c, mcs.WorkflowID(ns, app), clusterhealth.WorkflowID(m1), execution.WorkflowID(m2))
	expectRunningAgain(t, c, testEnsurePeriod+10*time.Second, before)
	t.Logf("the terminated workflows ran again %.1fs after the terminate (--ensure-period %s)", time.Since(terminated).Seconds(), testEnsurePeriod)
	eventually(t, 5*time.Second, func() error {
		if n := startedTotal(t, "starter", "Cluster", ensure.ReasonNotRunning); n <= healthStarts {
			return fmt.Errorf("no start of a Cluster workflow counted (%v)", n)
		}
		return nil
	})

	scale(t, testEnv.Member(m1), ns, app, 2)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
}

// TestSignalStartsAMissingWorkflow: a slice change of a MultiClusterService whose workflow was
// terminated starts it, long before the next ensure pass.
func TestSignalStartsAMissingWorkflow(t *testing.T) {
	restartStarter(t, "--ensure-period=1h")
	ns, m1, m2 := exposeToMember2(t)
	expectChangeStartsTerminatedMCS(t, ns, func() {
		scale(t, testEnv.Member(m1), ns, app, 2)
		expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	})
}

// TestClusterChangeStartsAMissingWorkflow: a change of a Cluster (here its spec) tells the
// MultiClusterServices that involve it; one whose workflow was terminated is started, counted
// as a start by a signal, long before the next ensure pass.
func TestClusterChangeStartsAMissingWorkflow(t *testing.T) {
	restartStarter(t, "--ensure-period=1h")
	ns, _, m2 := exposeToMember2(t)
	expectChangeStartsTerminatedMCS(t, ns, func() {
		// A new generation of the Cluster; null removes the region again.
		patchClusterSpec(t, m2, `{"region":"region-`+utilrand.String(5)+`"}`)
		t.Cleanup(func() { patchClusterSpec(t, m2, `{"region":null}`) })
	})
}

// expectChangeStartsTerminatedMCS terminates the workflow of the test's MultiClusterService in
// ns, makes change, and expects the workflow to run again, its start counted as one by a
// signal.
func expectChangeStartsTerminatedMCS(t *testing.T, ns string, change func()) {
	t.Helper()
	c := dialTemporal(t)
	before := runningRuns(t, c, mcs.WorkflowID(ns, app))
	signalStarts := startedTotal(t, "starter", "MultiClusterService", ensure.ReasonSignal)
	terminate(t, c, mcs.WorkflowID(ns, app))
	change()
	expectRunningAgain(t, c, 10*time.Second, before)
	require.Greater(t, startedTotal(t, "starter", "MultiClusterService", ensure.ReasonSignal), signalStarts)
}

// TestEnsureCost measures one ensure pass over 500 running workflows (the visibility query's
// pages and time), and checks that a pass starts exactly the ones that were terminated.
func TestEnsureCost(t *testing.T) {
	const n, gone = 500, 10
	ctx := context.Background()
	c := dialTemporal(t)
	suffix := utilrand.String(6)
	// Nobody runs this workflow type: its workflows stay Running with their first task pending.
	workflowType, taskQueue := "EnsureCostIdle", "ensure-cost-"+suffix
	starts := make([]trigger.Start, n)
	for i := range starts {
		starts[i] = trigger.Start{WorkflowID: fmt.Sprintf("ensure-cost-%s/%03d", suffix, i), Workflow: workflowType, TaskQueue: taskQueue, Signal: "change"}
	}
	each := func(do func(s trigger.Start) error) {
		g := errgroup.Group{}
		g.SetLimit(16)
		for _, s := range starts {
			g.Go(func() error { return do(s) })
		}
		require.NoError(t, g.Wait())
	}
	t.Cleanup(func() {
		each(func(s trigger.Start) error { _ = c.TerminateWorkflow(ctx, s.WorkflowID, "", "e2e: done"); return nil })
	})
	each(func(s trigger.Start) error { return trigger.SignalWithStart(ctx, c, s) })

	kind := ensure.Kind{Name: "EnsureCost", WorkflowType: workflowType, Wanted: func() []trigger.Start { return starts }}
	pass := func(pageSize int) ensure.Report {
		e := ensure.New(ensure.Config{Temporal: c, TaskQueue: taskQueue, Kinds: []ensure.Kind{kind}, Period: time.Minute, PageSize: pageSize})
		r := e.Pass(ctx, ensure.ReasonNotRunning)[0]
		require.NoError(t, r.Err)
		return r
	}
	eventually(t, 30*time.Second, func() error { // visibility follows the starts
		if r := pass(0); r.Running != n {
			return fmt.Errorf("%d of %d listed as running", r.Running, n)
		}
		return nil
	})
	for _, pageSize := range []int{ensure.DefaultPageSize, 100} {
		for range 3 {
			r := pass(pageSize)
			require.Equal(t, n, r.Running)
			require.Zero(t, r.Started, "every workflow runs")
			t.Logf("ensure pass over %d running workflows, page size %d: %d visibility page(s), list %s, pass %s",
				n, pageSize, r.Pages, r.List.Round(time.Millisecond), r.Pass.Round(time.Millisecond))
		}
	}

	var ids []string
	for _, s := range starts[:gone] {
		ids = append(ids, s.WorkflowID)
	}
	terminate(t, c, ids...)
	started := 0
	eventually(t, 30*time.Second, func() error { // visibility follows the terminations
		r := pass(0)
		started += r.Started
		if started != gone {
			return fmt.Errorf("%d of the %d terminated workflows started", started, gone)
		}
		return nil
	})
	for _, id := range ids {
		run, err := runningRun(c, id)
		require.NoError(t, err)
		require.NotEmpty(t, run, "%s runs again", id)
	}
}
