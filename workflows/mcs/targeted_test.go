package mcs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/workflows/wftest"
)

// calls counts what a reconcile did, from the recorder.
type calls struct{ observe, propagate, collect, dispatch, deletes, status int }

func counted(rec *recorder) calls {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return calls{rec.observed, len(rec.othersWrote["PropagateService"]), len(rec.collect), len(rec.dispatch), len(rec.deletes), len(rec.status)}
}

// starters are the two kinds of Cluster change a workflow gets: from starters before
// health-from-signals, which name the cluster only, and from those after, which carry its state.
var starters = []struct {
	name        string
	carryStates bool
}{{"cluster named", false}, {"cluster state carried", true}}

// flip sets the health of cluster, as the observation reads it, and signals the change the
// starter sends for it, with the cluster's state when carry is set.
func flip(env *testsuite.TestWorkflowEnvironment, cluster *act.ClusterState, isReady, carry bool) {
	*cluster = act.ClusterState{Name: cluster.Name, Ready: isReady, Since: env.Now()}
	change := Change{Kind: ChangeClusters, Cluster: cluster.Name}
	if carry {
		state := *cluster
		change.State = &state
	}
	env.SignalWorkflow(SignalChange, change)
}

// A consumer's Ready flip, named in the change, re-reads the observation and rewrites the
// status, and touches no Work: its Works are written either way, and Work execution applies
// them once it is back.
func TestConsumerFlipTakesATargetedReconcile(t *testing.T) {
	for _, starter := range starters {
		t.Run(starter.name, func(t *testing.T) { consumerFlip(t, starter.carryStates) })
	}
}

func consumerFlip(t *testing.T, carry bool) {
	member2 := ready("member2")
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), member2) })
	var afterFull calls
	env.RegisterDelayedCallback(func() {
		afterFull = counted(rec)
		flip(env, &member2, false, carry)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		now := counted(rec)
		if carry {
			assert.Equal(t, afterFull.observe, now.observe, "the change said what changed: nothing read")
		} else {
			assert.Equal(t, afterFull.observe+1, now.observe, "the observation read again")
		}
		assert.Equal(t, afterFull.propagate, now.propagate, "no Service propagated")
		assert.Equal(t, afterFull.collect, now.collect, "nothing collected")
		assert.Equal(t, afterFull.dispatch, now.dispatch, "nothing dispatched")
		assert.Equal(t, afterFull.deletes, now.deletes, "nothing pruned")
		assert.Contains(t, lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceApplied).Message, "Unreachable consumers not checked: member2")
		flip(env, &member2, true, carry)
	}, 2*time.Second)
	wftest.CheckAt(t, env, 3*time.Second, func() {
		now := counted(rec)
		assert.Equal(t, afterFull.dispatch, now.dispatch, "nothing dispatched when it is back")
		assert.NotContains(t, lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceApplied).Message, "Unreachable")
		s := wftest.Query[State](t, env, QueryState)
		assert.Equal(t, 3, s.Reconciles)
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

// A provider that flips within the grace keeps its slices at its consumers without a full
// reconcile; when the grace runs out its slices are withdrawn, and when it is back (a change
// that restores a provider) a full reconcile dispatches them again.
func TestProviderFlipIsTargetedUntilItsWithdrawal(t *testing.T) {
	for _, starter := range starters {
		t.Run(starter.name, func(t *testing.T) { providerFlip(t, starter.carryStates) })
	}
}

func providerFlip(t *testing.T, carry bool) {
	member1 := ready("member1")
	env, rec := newEnv(t, func() act.Observation { return observation(member1, ready("member2")) })
	var afterFull calls
	env.RegisterDelayedCallback(func() {
		afterFull = counted(rec)
		flip(env, &member1, false, carry)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		now := counted(rec)
		assert.Equal(t, afterFull.dispatch, now.dispatch, "inside the grace, member2 keeps member1's slices as they are")
		assert.Equal(t, afterFull.propagate, now.propagate)
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		last := rec.dispatch[len(rec.dispatch)-1]
		assert.Empty(t, last.Providers, "the grace ran out: member2 holds nothing from member1")
		assert.True(t, last.Exclusive)
		flip(env, &member1, true, carry)
	}, 75*time.Second)
	wftest.CheckAt(t, env, 80*time.Second, func() {
		last := rec.dispatch[len(rec.dispatch)-1]
		assert.Equal(t, []string{"member1"}, last.Providers, "restored by a full reconcile")
		assert.True(t, last.Exclusive)
		assert.Equal(t, "True", lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceCollected).Status)
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

// A named cluster that joins (a new cluster a MultiClusterService of every cluster takes)
// changes who takes part: a full reconcile.
func TestClusterJoiningTakesAFullReconcile(t *testing.T) {
	obs := observation(ready("member1"), ready("member2"))
	obs.Consumers = nil // every cluster
	env, rec := newEnv(t, func() act.Observation { return obs })
	env.RegisterDelayedCallback(func() {
		obs.Clusters = append(obs.Clusters, ready("member3"))
		env.SignalWorkflow(SignalChange, Change{Kind: ChangeClusters, Cluster: "member3"})
	}, time.Second)
	wftest.CheckAt(t, env, 2*time.Second, func() {
		var consumers []string
		for _, d := range rec.dispatch {
			consumers = append(consumers, d.Consumer)
		}
		assert.Contains(t, consumers, "member3", "the new consumer receives the slices")
		require.NotEmpty(t, rec.othersWrote["PropagateService"])
		assert.Len(t, rec.othersWrote["PropagateService"], 2, "the Service propagated again, to member3 too")
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

func TestOnlyHealthChanged(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	before := observation(ready("member1"), ready("member2"))
	flipped := observation(ready("member1"), act.ClusterState{Name: "member2", Since: now})
	assert.True(t, onlyHealthChanged(before, flipped, MakePlan(before, now), MakePlan(flipped, now)))

	pull := observation(ready("member1"), act.ClusterState{Name: "member2", Ready: true, Pull: true})
	assert.False(t, onlyHealthChanged(before, pull, MakePlan(before, now), MakePlan(pull, now)), "switched to Pull")

	respec := flipped
	respec.Generation = 2
	assert.False(t, onlyHealthChanged(before, respec, MakePlan(before, now), MakePlan(respec, now)), "the spec changed too")

	provider := observation(act.ClusterState{Name: "member1", Since: now.Add(-time.Hour)}, ready("member2"))
	assert.False(t, onlyHealthChanged(before, provider, MakePlan(before, now), MakePlan(provider, now)), "a provider withdrawn")
}

// A carried state is used only when it says everything: a cluster the observation does not
// hold (it joined), or one that switched to Pull, takes the observation and a full reconcile.
func TestCarriedStateOfMoreThanHealthTakesAFullReconcile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change act.ClusterState
	}{
		{"joined", act.ClusterState{Name: "member3", Ready: true}},
		{"switched to Pull", act.ClusterState{Name: "member2", Ready: true, Pull: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observation(ready("member1"), ready("member2"))
			obs.Consumers = nil // every cluster
			env, rec := newEnv(t, func() act.Observation { return obs })
			var afterFirst calls
			env.RegisterDelayedCallback(func() {
				afterFirst = counted(rec)
				obs.Clusters = []act.ClusterState{ready("member1"), tc.change}
				if tc.change.Name == "member3" {
					obs.Clusters = append(obs.Clusters[:1], ready("member2"), tc.change)
				}
				state := tc.change
				env.SignalWorkflow(SignalChange, Change{Kind: ChangeClusters, Cluster: state.Name, State: &state})
			}, time.Second)
			wftest.CheckAt(t, env, 2*time.Second, func() {
				now := counted(rec)
				assert.Equal(t, afterFirst.observe+1, now.observe, "the observation read again")
				assert.Equal(t, afterFirst.propagate+1, now.propagate, "a full reconcile")
			}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
		})
	}
}

// A cluster's latest change decides: its state when it carries one, a read when it does not.
func TestPendingKeepsEachClustersLatestState(t *testing.T) {
	down := act.ClusterState{Name: "member2"}
	up := act.ClusterState{Name: "member2", Ready: true}
	other := act.ClusterState{Name: "member3", Ready: true}
	var p Pending
	p.add(Change{Kind: ChangeClusters, Cluster: "member2", State: &down})
	p.add(Change{Kind: ChangeClusters, Cluster: "member3", State: &other})
	p.add(Change{Kind: ChangeClusters, Cluster: "member2", State: &up})
	assert.Equal(t, []string{"member2", "member3"}, p.Clusters)
	assert.ElementsMatch(t, []act.ClusterState{up, other}, p.States)

	p.add(Change{Kind: ChangeClusters, Cluster: "member2"})
	assert.Equal(t, []act.ClusterState{other}, p.States, "member2's latest change carried no state")
	_, ok := withClusterStates(observation(ready("member2"), ready("member3")), p.Clusters, p.States)
	assert.False(t, ok, "member2 must be read")

	p.add(Change{Kind: ChangeClusters, Cluster: "member4", State: &other})
	assert.Equal(t, []act.ClusterState{other}, p.States, "a state of another cluster than the one named is not taken")
	assert.False(t, p.Full)
}
