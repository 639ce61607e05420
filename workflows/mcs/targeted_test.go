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
type calls struct{ propagate, collect, dispatch, deletes, status int }

func counted(rec *recorder) calls {
	return calls{len(rec.othersWrote["PropagateService"]), len(rec.collect), len(rec.dispatch), len(rec.deletes), len(rec.status)}
}

// flip sets the health of cluster, as the observation reads it, and signals the change the
// starter sends for it.
func flip(env *testsuite.TestWorkflowEnvironment, cluster *act.ClusterState, isReady bool) {
	*cluster = act.ClusterState{Name: cluster.Name, Ready: isReady, Since: env.Now()}
	env.SignalWorkflow(SignalChange, Change{Kind: ChangeClusters, Cluster: cluster.Name})
}

// A consumer's Ready flip, named in the change, re-reads the observation and rewrites the
// status, and touches no Work: its Works are written either way, and Work execution applies
// them once it is back.
func TestConsumerFlipTakesATargetedReconcile(t *testing.T) {
	member2 := ready("member2")
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), member2) })
	var afterFull calls
	env.RegisterDelayedCallback(func() {
		afterFull = counted(rec)
		flip(env, &member2, false)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		now := counted(rec)
		assert.Equal(t, afterFull.propagate, now.propagate, "no Service propagated")
		assert.Equal(t, afterFull.collect, now.collect, "nothing collected")
		assert.Equal(t, afterFull.dispatch, now.dispatch, "nothing dispatched")
		assert.Equal(t, afterFull.deletes, now.deletes, "nothing pruned")
		assert.Contains(t, lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceApplied).Message, "Unreachable consumers not checked: member2")
		flip(env, &member2, true)
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
	member1 := ready("member1")
	env, rec := newEnv(t, func() act.Observation { return observation(member1, ready("member2")) })
	var afterFull calls
	env.RegisterDelayedCallback(func() {
		afterFull = counted(rec)
		flip(env, &member1, false)
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
		flip(env, &member1, true)
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
