package clusterhealth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/workflows/wftest"
)

// prober answers ProbeCluster with result (or err) and counts the probes.
type prober struct {
	result health.ProbeResult
	err    error
	probes int
}

func newEnv(p *prober) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env)
	env.OnActivity(activities.ProbeCluster, mock.Anything, "member1").Return(func(context.Context, string) (health.ProbeResult, error) {
		p.probes++
		return p.result, p.err
	})
	return env
}

func state(t *testing.T, env *testsuite.TestWorkflowEnvironment) State {
	return wftest.Query[State](t, env, QueryState)
}

func TestProbesEveryIntervalUntilTheClusterIsGone(t *testing.T) {
	p := &prober{result: health.ProbeResult{Exists: true, Ready: true, Message: "ok"}}
	env := newEnv(p)
	env.RegisterDelayedCallback(func() {
		assert.Equal(t, 4, p.probes, "at 0, 10, 20 and 30 s")
		s := state(t, env)
		assert.True(t, s.Ready)
		assert.Equal(t, "ok", s.Message)
		assert.Equal(t, 4, s.Probes)
		p.result = health.ProbeResult{} // the Cluster is deleted
	}, 35*time.Second)
	env.ExecuteWorkflow(ClusterHealth, Input{Cluster: "member1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, 5, p.probes, "the probe at 40 s found the Cluster gone")
}

func TestResyncProbesAtOnce(t *testing.T) {
	p := &prober{result: health.ProbeResult{Exists: true, Ready: true}}
	env := newEnv(p)
	env.RegisterDelayedCallback(func() {
		p.result = health.ProbeResult{Exists: true, Message: "connection refused"}
		env.SignalWorkflow(SignalResync, nil)
	}, 3*time.Second)
	wftest.CheckAt(t, env, 4*time.Second, func() {
		assert.Equal(t, 2, p.probes)
		s := state(t, env)
		assert.False(t, s.Ready)
		assert.Equal(t, "connection refused", s.Message)
	}, ClusterHealth, Input{Cluster: "member1", Interval: time.Minute})
}

func TestFailedProbeKeepsTheLastStateAndProbesAgain(t *testing.T) {
	p := &prober{result: health.ProbeResult{Exists: true, Ready: true, Message: "ok"}}
	env := newEnv(p)
	env.RegisterDelayedCallback(func() { p.err = errors.New("control plane unreachable") }, 5*time.Second)
	env.RegisterDelayedCallback(func() { p.err = nil }, 25*time.Second)
	wftest.CheckAt(t, env, 35*time.Second, func() {
		assert.Greater(t, p.probes, 4, "the failed probes were retried and the loop went on")
		s := state(t, env)
		assert.True(t, s.Ready)
		assert.Equal(t, 4, s.Probes, "one per interval")
	}, ClusterHealth, Input{Cluster: "member1"})
}

// Continue-as-new keeps the cluster and interval; a resync that arrived meanwhile is answered
// by the new run's first probe.
func TestContinueAsNewCarriesTheInput(t *testing.T) {
	p := &prober{result: health.ProbeResult{Exists: true, Ready: true}}
	env := newEnv(p)
	env.SetContinueAsNewSuggested(true)
	env.ExecuteWorkflow(ClusterHealth, Input{Cluster: "member1", Interval: 3 * time.Second})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Equal(t, Input{Cluster: "member1", Interval: 3 * time.Second}, next)
	assert.Equal(t, 1, p.probes)
}
