package env

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// envTestWait waits for the signal "finish" and returns its value.
func envTestWait(ctx workflow.Context) (string, error) {
	var value string
	workflow.GetSignalChannel(ctx, "finish").Receive(ctx, &value)
	return value, nil
}

func TestTemporalServer(t *testing.T) {
	e := startForTest(t, Options{Members: 1, TemporalBackend: TemporalPostgres})
	t.Cleanup(func() { _ = e.Stop() })
	ctx := t.Context()

	opts, err := e.Temporal.ClientOptions()
	require.NoError(t, err)
	require.NotNil(t, opts.ConnectionOptions.TLS, "the server's clients use TLS")
	c, err := client.DialContext(ctx, opts)
	require.NoError(t, err)
	defer c.Close()

	t.Run("the frontend refuses clients without a certificate", func(t *testing.T) {
		plain := client.Options{HostPort: e.Temporal.Address, Namespace: e.Temporal.Namespace}
		noCert := opts
		noCert.ConnectionOptions.TLS = opts.ConnectionOptions.TLS.Clone()
		noCert.ConnectionOptions.TLS.Certificates = nil
		noCert.ConnectionOptions.TLS.GetClientCertificate = nil
		for name, o := range map[string]client.Options{"plain": plain, "TLS without a client certificate": noCert} {
			dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			other, err := client.DialContext(dialCtx, o)
			cancel()
			if err == nil {
				other.Close()
			}
			assert.Error(t, err, name)
		}
	})

	t.Run("the namespace and every search attribute are registered", func(t *testing.T) {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: e.Temporal.Namespace})
		require.NoError(t, err)
		attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: e.Temporal.Namespace})
		require.NoError(t, err)
		for _, name := range SearchAttributes {
			assert.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, attrs.GetCustomAttributes()[name], name)
		}
	})

	t.Run("history has more than one shard", func(t *testing.T) {
		info, err := c.WorkflowService().GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{})
		require.NoError(t, err)
		assert.EqualValues(t, temporalServerShards, info.GetHistoryShardCount())
	})

	t.Run("the Temporal UI answers", func(t *testing.T) {
		assert.NoError(t, e.checkTemporalUI(ctx))
	})

	t.Run("a workflow runs and outlives a restart of the server", func(t *testing.T) {
		w := worker.New(c, "env-test", worker.Options{})
		w.RegisterWorkflowWithOptions(envTestWait, workflow.RegisterOptions{Name: "EnvTestWait"})
		require.NoError(t, w.Start())
		defer w.Stop()

		kind := temporal.NewSearchAttributeKeyKeyword("KarmadaKind")
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "env-test-server", TaskQueue: "env-test",
			TypedSearchAttributes: temporal.NewSearchAttributes(kind.ValueSet("EnvTest"))}, "EnvTestWait")
		require.NoError(t, err)
		_, err = c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
		require.NoError(t, err)

		begin := time.Now()
		require.NoError(t, e.RestartTemporal(ctx))
		t.Logf("Temporal server restarted in %.1fs", time.Since(begin).Seconds())

		desc, err := c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
		require.NoError(t, err, "the workflow is gone after the restart")
		assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
		require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), "finish", "done"))
		resultCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var result string
		require.NoError(t, run.Get(resultCtx, &result))
		assert.Equal(t, "done", result)

		require.Eventually(t, func() bool {
			list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: e.Temporal.Namespace, Query: "KarmadaKind = 'EnvTest'"})
			return err == nil && len(list.GetExecutions()) == 1 && list.GetExecutions()[0].GetExecution().GetWorkflowId() == run.GetID()
		}, 30*time.Second, 250*time.Millisecond, "visibility never listed the workflow by its search attribute")
	})

	t.Run("nothing connected outside loopback", func(t *testing.T) {
		assert.Empty(t, e.OutsideConnections())
	})

	t.Run("Stop leaves no process (PostgreSQL included) and no directory behind", func(t *testing.T) {
		assertStopsClean(t, e)
	})
}
