package clusterhealth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/workflows/wftest"
)

// fakeProbe answers ProbeCluster with result (or err) and counts the probes.
type fakeProbe struct {
	result health.ProbeResult
	err    error
	probes int
	last   health.ProbeInput
	local  int // probes run as a local activity
}

func newEnv(p *fakeProbe) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env)
	env.OnActivity(activities.ProbeCluster, mock.Anything, mock.Anything).Return(func(ctx context.Context, in health.ProbeInput) (health.ProbeResult, error) {
		p.probes++
		if activity.GetInfo(ctx).IsLocalActivity {
			p.local++
		}
		p.last = in
		return p.result, p.err
	})
	return env
}

func state(t *testing.T, env *testsuite.TestWorkflowEnvironment) State {
	return wftest.Query[State](t, env, QueryState)
}

func TestProbesEveryIntervalUntilTheClusterIsGone(t *testing.T) {
	p := &fakeProbe{result: health.ProbeResult{Exists: true, Ready: true, Message: "ok"}}
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

// A probe is a regular activity: a cluster that does not answer takes longer than a workflow
// task may wait for a local activity.
func TestProbesRunAsRegularActivities(t *testing.T) {
	p := &fakeProbe{result: health.ProbeResult{Exists: true, Ready: true}}
	env := newEnv(p)
	wftest.CheckAt(t, env, 25*time.Second, func() {
		assert.Equal(t, 3, p.probes)
		assert.Zero(t, p.local)
	}, ClusterHealth, Input{Cluster: "member1"})
}

func TestResyncProbesAtOnce(t *testing.T) {
	p := &fakeProbe{result: health.ProbeResult{Exists: true, Ready: true}}
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
	p := &fakeProbe{result: health.ProbeResult{Exists: true, Ready: true, Message: "ok"}}
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
	p := &fakeProbe{result: health.ProbeResult{Exists: true, Ready: true, Reachable: true}}
	env := newEnv(p)
	env.SetContinueAsNewSuggested(true)
	env.ExecuteWorkflow(ClusterHealth, Input{Cluster: "member1", Interval: 3 * time.Second})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Equal(t, Input{Cluster: "member1", Interval: 3 * time.Second}, next)
	assert.Equal(t, 1, p.probes)
}

// memberProbe answers ProbeCluster as the activity does for a member that answers /readyz when
// reachable: the Ready condition it keeps follows the probe, unless a failure is held.
type memberProbe struct {
	reachable, ready bool
	gone             bool
}

func (m *memberProbe) probe(_ context.Context, in health.ProbeInput) (health.ProbeResult, error) {
	if m.gone {
		return health.ProbeResult{}, nil
	}
	if m.reachable || !in.HoldReady {
		m.ready = m.reachable
	}
	return health.ProbeResult{Exists: true, Ready: m.ready, Reachable: m.reachable}, nil
}

func newMemberEnv(probe func(context.Context, health.ProbeInput) (health.ProbeResult, error)) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env)
	env.OnActivity(activities.ProbeCluster, mock.Anything, mock.Anything).Return(probe)
	return env
}

// Probes at 0, 10, 20, ... s; the member stops answering at 5 s. The probes at 10, 20 and 30 s
// fail within the 30 s threshold and keep Ready; the one at 40 s, 30 s after the first failure,
// flips it. One answer brings it back at once.
func TestFailedProbesFlipReadyOnlyAfterTheThreshold(t *testing.T) {
	m := &memberProbe{reachable: true}
	env := newMemberEnv(m.probe)
	env.RegisterDelayedCallback(func() { m.reachable = false }, 5*time.Second)
	env.RegisterDelayedCallback(func() {
		s := state(t, env)
		assert.True(t, s.Ready, "three failed probes within the threshold")
		assert.Equal(t, 25*time.Second, env.Now().Sub(s.FailingSince), "failing since the probe at 10 s")
	}, 35*time.Second)
	env.RegisterDelayedCallback(func() {
		assert.False(t, state(t, env).Ready, "failed for the threshold")
		m.reachable = true
	}, 45*time.Second)
	wftest.CheckAt(t, env, 55*time.Second, func() {
		s := state(t, env)
		assert.True(t, s.Ready, "one success is enough")
		assert.True(t, s.FailingSince.IsZero())
	}, ClusterHealth, Input{Cluster: "member1", FailureThreshold: 30 * time.Second})
}

func TestOneLostProbeKeepsReady(t *testing.T) {
	m := &memberProbe{reachable: true}
	env := newMemberEnv(m.probe)
	env.RegisterDelayedCallback(func() { m.reachable = false }, 5*time.Second)
	env.RegisterDelayedCallback(func() { m.reachable = true }, 15*time.Second)
	var readiness []bool
	for at := 11 * time.Second; at < 60*time.Second; at += 10 * time.Second {
		env.RegisterDelayedCallback(func() { readiness = append(readiness, state(t, env).Ready) }, at)
	}
	wftest.CheckAt(t, env, 65*time.Second, func() {
		assert.Equal(t, []bool{true, true, true, true, true}, readiness)
	}, ClusterHealth, Input{Cluster: "member1"})
}

func TestHoldReady(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.True(t, HoldReady(time.Time{}, now, 30*time.Second), "a first failure is held")
	assert.True(t, HoldReady(now.Add(-29*time.Second), now, 30*time.Second))
	assert.False(t, HoldReady(now.Add(-30*time.Second), now, 30*time.Second))
}

// A resync that arrives while the probe finds the Cluster gone may come from the Cluster being
// created again: the run continues as new instead of ending, and the new run probes again.
func TestGoneClusterWithPendingResyncContinuesAsNew(t *testing.T) {
	m := &memberProbe{reachable: true}
	var env *testsuite.TestWorkflowEnvironment
	env = newMemberEnv(func(ctx context.Context, in health.ProbeInput) (health.ProbeResult, error) {
		if m.gone {
			env.SignalWorkflow(SignalResync, nil) // arrives during the probe
		}
		return m.probe(ctx, in)
	})
	env.RegisterDelayedCallback(func() { m.gone = true }, 5*time.Second)
	env.ExecuteWorkflow(ClusterHealth, Input{Cluster: "member1", Interval: 10 * time.Second, FailureThreshold: time.Minute})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Equal(t, Input{Cluster: "member1", Interval: 10 * time.Second, FailureThreshold: time.Minute}, next)
}

// A continued run goes on counting failures from where the last run began to see them.
func TestContinueAsNewCarriesTheFailureStart(t *testing.T) {
	p := &fakeProbe{result: health.ProbeResult{Exists: true, Ready: true}} // held: not reachable
	env := newEnv(p)
	env.SetContinueAsNewSuggested(true)
	start := env.Now()
	env.ExecuteWorkflow(ClusterHealth, Input{Cluster: "member1"})
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.WithinDuration(t, start, next.FailingSince, time.Second)
	assert.True(t, p.last.HoldReady, "a first failure is held")
}

// A Pull cluster is judged on the control plane's side by its agent's lease (the probe
// activity reads it, and the Ready condition the agent wrote): nothing is scheduled on the
// cluster's own task queue, and its result stands as reported, Ready or not.
func TestPullClusterIsJudgedByItsAgentsLease(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: "karmadaflow"})
	leaseFresh := true
	var here []health.ProbeInput
	onAgent := 0
	env.OnActivity(activities.ProbeCluster, mock.Anything, mock.Anything).Return(func(ctx context.Context, in health.ProbeInput) (health.ProbeResult, error) {
		if activity.GetInfo(ctx).TaskQueue == "karmadaflow/cluster/member1" {
			onAgent++
			return health.ProbeResult{Exists: true, Pull: true, Ready: true, Reachable: true}, nil
		}
		here = append(here, in)
		if !leaseFresh {
			return health.ProbeResult{Exists: true, Pull: true, Message: "the agent of Pull cluster member1 last renewed its lease at ..."}, nil
		}
		return health.ProbeResult{Exists: true, Pull: true, Ready: true, Reachable: true}, nil
	})
	env.RegisterDelayedCallback(func() { leaseFresh = false }, 25*time.Second)
	wftest.CheckAt(t, env, 35*time.Second, func() {
		assert.Zero(t, onAgent, "probes scheduled on the agent's queue")
		require.Len(t, here, 4, "at 0, 10, 20 and 30 s, each on the control plane's side")
		for _, in := range here {
			assert.Empty(t, in.Unanswered)
		}
		assert.False(t, state(t, env).Ready)
		assert.Contains(t, state(t, env).Message, "last renewed its lease")
	}, ClusterHealth, Input{Cluster: "member1"})
}
