package execution

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	act "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/workflows/wftest"
)

// applier answers ApplyWorks: the Works named in fail fail once each, full pass i answers
// fullResults[i] (when given) after fullDelay; every call is recorded.
type applier struct {
	// mu guards the fields below: the test environment runs activities in goroutines of their
	// own, the batches of one pass at the same time.
	mu    sync.Mutex
	calls []act.ApplyInput
	local []bool // per call: it ran as a local activity
	// slowLocal: a named batch run as a local activity blocks until its time is up.
	slowLocal   bool
	fail        map[string]bool
	fullResults []act.ApplyResult
	fullDelay   time.Duration
	fullPasses  int
}

func (a *applier) apply(ctx context.Context, in act.ApplyInput) (act.ApplyResult, error) {
	local := activity.GetInfo(ctx).IsLocalActivity
	a.mu.Lock()
	a.calls = append(a.calls, in)
	a.local = append(a.local, local)
	slow := a.slowLocal && local && !in.All
	a.mu.Unlock()
	if slow {
		<-ctx.Done()
		return act.ApplyResult{}, ctx.Err()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var res act.ApplyResult
	if in.All {
		if a.fullPasses < len(a.fullResults) {
			res = a.fullResults[a.fullPasses]
		}
		a.fullPasses++
		return res, nil
	}
	for _, name := range in.Works {
		if a.fail[name] {
			delete(a.fail, name)
			res.Failed = append(res.Failed, name)
			res.Error = "applying " + name + " failed"
			continue
		}
		res.Applied++
	}
	return res, nil
}

// named are the Works of the calls that named Works, in order.
func (a *applier) named() [][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out [][]string
	for _, c := range a.calls {
		if !c.All {
			out = append(out, c.Works)
		}
	}
	return out
}

func newEnv(t *testing.T, a *applier) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env)
	full := func(in act.ApplyInput) bool { return in.All }
	env.OnActivity(activities.ApplyWorks, mock.Anything, mock.MatchedBy(full)).After(a.fullDelay).Return(a.apply)
	env.OnActivity(activities.ApplyWorks, mock.Anything, mock.Anything).Return(a.apply)
	return env
}

func state(t *testing.T, env *testsuite.TestWorkflowEnvironment) State {
	return wftest.Query[State](t, env, QueryState)
}

func TestChangesAreAppliedByNameAfterOneFullPass(t *testing.T) {
	a := &applier{}
	env := newEnv(t, a)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalChange, Change{Work: "b", Works: []string{"a"}, Versions: map[string]string{"b": "7"}})
	}, time.Second)
	wftest.CheckAt(t, env, 10*time.Second, func() {
		require.Len(t, a.calls, 2)
		assert.Equal(t, act.ApplyInput{Cluster: "member1", All: true}, a.calls[0])
		assert.Equal(t, act.ApplyInput{Cluster: "member1", Works: []string{"a", "b"}, Versions: map[string]string{"b": "7"}}, a.calls[1])
		s := state(t, env)
		assert.Equal(t, 2, s.Reconciles)
		assert.Equal(t, 2, s.Applied)
		assert.Empty(t, s.Failed)
	}, WorkExecution, Input{Cluster: "member1"})
}

// A Work that failed is retried at its backoff even when a change of another Work is applied
// first: that batch's success does not erase the earlier failure.
func TestFailedWorkIsRetriedAfterAnUnrelatedChange(t *testing.T) {
	a := &applier{fail: map[string]bool{"a": true}}
	env := newEnv(t, a)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalChange, Change{Work: "a"}) }, time.Second)
	// The retry of "a" is due one second after its failure; "b" changes as soon as it failed.
	env.SetOnLocalActivityCompletedListener(func(_ *activity.Info, result converter.EncodedValue, _ error) {
		var res act.ApplyResult
		if result != nil && result.Get(&res) == nil && slices.Contains(res.Failed, "a") {
			env.SignalWorkflow(SignalChange, Change{Work: "b"})
		}
	})
	wftest.CheckAt(t, env, 30*time.Second, func() {
		assert.Equal(t, [][]string{{"a"}, {"b"}, {"a"}}, a.named(), "a is retried well before the safety resync")
		assert.Empty(t, state(t, env).Failed)
	}, WorkExecution, Input{Cluster: "member1"})
}

// A Work that failed is retried by a regular activity: a member that failed may be slow, and a
// regular activity does not hold the workflow task.
func TestRetriedWorksRunAsARegularActivity(t *testing.T) {
	a := &applier{fail: map[string]bool{"a": true}}
	env := newEnv(t, a)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalChange, Change{Works: []string{"a"}}) }, time.Second)
	wftest.CheckAt(t, env, 30*time.Second, func() {
		assert.Equal(t, [][]string{{"a"}, {"a"}}, a.named())
		assert.Equal(t, []bool{false, true, false}, a.local, "full pass: regular; the change: local; its retry: regular")
		assert.Empty(t, state(t, env).Failed)
	}, WorkExecution, Input{Cluster: "member1"})
}

// A small batch whose local activity runs out of its time (a share of the workflow task
// timeout) runs again at once as a regular activity, without counting a failure.
func TestLocalBatchOutOfTimeRunsAgainAsARegularActivity(t *testing.T) {
	a := &applier{slowLocal: true}
	env := newEnv(t, a)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{WorkflowTaskTimeout: time.Second})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalChange, Change{Works: []string{"a"}}) }, time.Second)
	wftest.CheckAt(t, env, 5*time.Second, func() {
		assert.Equal(t, [][]string{{"a"}, {"a"}}, a.named())
		assert.Equal(t, []bool{false, true, false}, a.local)
		s := state(t, env)
		assert.Empty(t, s.Failed)
		assert.Equal(t, 1, s.Applied)
	}, WorkExecution, Input{Cluster: "member1"})
}

// A failed full pass is repeated at its backoff even when a named change is applied first.
func TestFailedFullPassIsRepeatedAfterAChange(t *testing.T) {
	a := &applier{fullResults: []act.ApplyResult{{}, {Failed: []string{"*"}, Error: "listing Works failed"}}}
	env := newEnv(t, a)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResync, nil) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalChange, Change{Work: "b"}) }, 1100*time.Millisecond)
	wftest.CheckAt(t, env, 30*time.Second, func() {
		assert.Equal(t, 3, a.fullPasses, "the failed full pass is repeated")
		assert.Equal(t, [][]string{{"b"}}, a.named())
		assert.Empty(t, state(t, env).Failed)
	}, WorkExecution, Input{Cluster: "member1"})
}

// Continue-as-new carries the failed Works and the changes that arrived during the last pass.
func TestContinueAsNewCarriesFailedWorksAndPendingChanges(t *testing.T) {
	a := &applier{fullDelay: 2 * time.Second, fullResults: []act.ApplyResult{{Applied: 1, Failed: []string{"a"}, Error: "conflict"}}}
	env := newEnv(t, a)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalChange, Change{Work: "d", Versions: map[string]string{"d": "9"}})
		env.SetContinueAsNewSuggested(true)
	}, time.Second)
	env.ExecuteWorkflow(WorkExecution, Input{Cluster: "member1"})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Equal(t, Input{Cluster: "member1", Pending: []string{"d", "a"}}, next)
	assert.Equal(t, []act.ApplyInput{{Cluster: "member1", All: true}}, a.calls, "only the full pass ran")
}

// remover answers RemoveExecutionSpace with the results in turn and counts the calls.
type remover struct {
	results []act.RemoveResult
	calls   int
}

func (r *remover) remove(context.Context, string) (act.RemoveResult, error) {
	res := r.results[min(r.calls, len(r.results)-1)]
	r.calls++
	return res, nil
}

func onRemove(env *testsuite.TestWorkflowEnvironment, r *remover) {
	env.OnActivity(activities.RemoveExecutionSpace, mock.Anything, "member1").Return(r.remove)
}

// The resync the starter sends when the Cluster is deleted finds it gone: the Works left are
// released, the namespace removed, and the workflow ends.
func TestEndsWhenTheClusterIsGone(t *testing.T) {
	a := &applier{fullResults: []act.ApplyResult{{Applied: 2}, {ClusterGone: true}}}
	r := &remover{results: []act.RemoveResult{{Removed: true}}}
	env := newEnv(t, a)
	onRemove(env, r)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResync, nil) }, time.Second)
	env.ExecuteWorkflow(WorkExecution, Input{Cluster: "member1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, 1, r.calls)
	assert.Equal(t, 2, a.fullPasses)
}

// A Cluster created again before its namespace was removed keeps the workflow: the next full
// pass applies everything.
func TestClusterBackBeforeTheRemovalKeepsRunning(t *testing.T) {
	a := &applier{fullResults: []act.ApplyResult{{ClusterGone: true}, {Applied: 1}}}
	r := &remover{results: []act.RemoveResult{{Removed: false}}}
	env := newEnv(t, a)
	onRemove(env, r)
	wftest.CheckAt(t, env, 30*time.Second, func() {
		assert.Equal(t, 1, r.calls)
		assert.Equal(t, 2, a.fullPasses, "a full pass again at the backoff")
		assert.Empty(t, state(t, env).Failed)
	}, WorkExecution, Input{Cluster: "member1"})
}

// A signal that arrives while the namespace is removed may come from the Cluster created
// again: a new run looks at it instead of the workflow ending.
func TestSignalDuringTheRemovalContinuesAsNew(t *testing.T) {
	a := &applier{fullResults: []act.ApplyResult{{ClusterGone: true}}}
	var env *testsuite.TestWorkflowEnvironment
	env = newEnv(t, a)
	env.OnActivity(activities.RemoveExecutionSpace, mock.Anything, "member1").Return(func(context.Context, string) (act.RemoveResult, error) {
		env.SignalWorkflow(SignalResync, nil)
		return act.RemoveResult{Removed: true}, nil
	})
	env.ExecuteWorkflow(WorkExecution, Input{Cluster: "member1"})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Equal(t, Input{Cluster: "member1"}, next)
}

// A Pull cluster's Works are applied by its agent, which watches them itself: nothing is
// scheduled on the cluster's own task queue. Every full pass still runs on the control plane's
// side, which makes the execution namespace (the agent may not), and a change of a Work, once
// the cluster is known Pull, runs no activity at all.
func TestPullClusterWorksAreLeftToItsAgent(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env)
	var onAgent int
	var here []act.ApplyInput
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.TaskQueue == "karmadaflow/cluster/member1" {
			onAgent++
		}
	})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: "karmadaflow"})
	env.OnActivity(activities.ApplyWorks, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in act.ApplyInput) (act.ApplyResult, error) {
			here = append(here, in)
			return act.ApplyResult{Pull: true}, nil // the control plane's side does not dial it
		})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalChange, Change{Works: []string{"a"}}) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResync, nil) }, 2*time.Second)
	wftest.CheckAt(t, env, 10*time.Second, func() {
		assert.Zero(t, onAgent, "activities scheduled on the agent's queue")
		assert.Equal(t, []act.ApplyInput{{Cluster: "member1", All: true}, {Cluster: "member1", All: true}}, here,
			"the full passes only, on the control plane's side")
		assert.Empty(t, state(t, env).Failed)
		assert.Equal(t, 3, state(t, env).Reconciles, "the change was taken")
	}, WorkExecution, Input{Cluster: "member1"})
}
