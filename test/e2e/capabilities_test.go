package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/karmadaflow/karmadaflow/test/service"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
)

// TestStarterRefusesWorkersWithOtherCapabilities runs a starter without provisioning beside
// the service's worker, which provisions: the starter exits, naming the worker.
func TestStarterRefusesWorkersWithOtherCapabilities(t *testing.T) {
	standaloneOnly(t)
	out, refused, err := runUntilExit("starter", "--enable-provisioning=false")
	require.NoError(t, err)
	require.True(t, refused, "the starter ran beside workers with other capabilities:\n%s", out)
	assert.Contains(t, out, "capabilities differ on task queue karmadaflow: this starter runs [cluster-health,mcs,work-execution]")
	assert.Contains(t, out, "karmadaflow-worker[cluster-health,mcs,provisioning,work-execution]")
}

// TestWorkerRefusesWorkflowsItDoesNotRegister runs a worker without cluster health on a task
// queue of its own (the service's starter would refuse it on the service's); when a
// ClusterHealth workflow is started there, as a starter with cluster health does for a new
// Cluster, the worker exits, naming the workflow.
func TestWorkerRefusesWorkflowsItDoesNotRegister(t *testing.T) {
	c, err := testEnv.Temporal.Dial(context.Background())
	require.NoError(t, err)
	defer c.Close()

	const queue = "capabilities-test"
	exited := make(chan struct{})
	var out string
	var refused bool
	var runErr error
	go func() {
		defer close(exited)
		out, refused, runErr = runUntilExit("worker", "--task-queue", queue, "--enable-cluster-health=false")
	}()
	// Started after the worker (beyond the clock skew the check allows): a Cluster that does
	// not exist, whose health workflow ends at once where it is registered.
	time.Sleep(10 * time.Second)
	id := clusterhealth.WorkflowID("capabilities-test-" + time.Now().Format("150405"))
	_, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue},
		clusterhealth.WorkflowName, clusterhealth.Input{Cluster: "capabilities-test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), id, "", "test over") })

	<-exited
	require.NoError(t, runErr)
	require.True(t, refused, "the worker kept running:\n%s", out)
	assert.Contains(t, out, "capabilities differ on task queue "+queue+": this worker runs [mcs,provisioning,work-execution]")
	assert.Contains(t, out, id+" ("+clusterhealth.WorkflowName+")")
}

// runUntilExit runs one more worker or starter (on the service's task queue unless extra says
// otherwise) with extra flags
// until it exits (within two minutes: capabilities are checked every 10 s, and a worker shows
// up to a check when it next polls, within a minute). It returns the output, and whether the
// process exited on its own with an error.
func runUntilExit(component string, extra ...string) (output string, refused bool, err error) {
	metrics, err := service.FreeAddress()
	if err != nil {
		return "", false, err
	}
	args := append(testEnv.Temporal.ServiceFlags(),
		"--karmada-kubeconfig", testEnv.ControlPlane.Kubeconfig, "--host-kubeconfig", testEnv.Host.Kubeconfig,
		"--metrics-bind-address", metrics, "--log-format", "console")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, svc.Binary(component), append(args, extra...)...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return string(out), false, nil // killed at the deadline: it did not refuse
	case errors.As(err, &exit):
		return string(out), true, nil
	case err != nil:
		return string(out), false, fmt.Errorf("running %s: %w", component, err)
	}
	return string(out), false, nil
}
