package mcs

import (
	"reflect"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
)

// Cluster changes that touch health alone: a member's Ready flip reaches every
// MultiClusterService that involves it, and none of them needs a full reconcile for it.

// changeTargetedClusters versions handling a Cluster change that names its cluster with a
// targeted reconcile: the observation is read again, and when only the clusters' health
// changed and no provider is withdrawn or restored, the reconcile writes what the status says
// of them and nothing else. Runs from before did a full reconcile on every cluster change.
const changeTargetedClusters = "targeted-cluster-changes"

// changeHealthFromSignals versions taking a targeted reconcile's cluster states from the
// changes that carried them, without reading the observation again. Runs from before read it
// on every targeted reconcile.
const changeHealthFromSignals = "health-from-signals"

// targetedClusters tells whether the pending cluster changes may take a targeted reconcile:
// nothing else asks for a full one, an observation is at hand to compare with, and the run
// is on that version.
func (r *reconciler) targetedClusters(ctx workflow.Context, pending Pending) bool {
	return len(pending.Clusters) > 0 && !pending.Full && r.obs != nil &&
		workflow.GetVersion(ctx, changeTargetedClusters, workflow.DefaultVersion, 1) == 1
}

// healthFromSignals takes a targeted reconcile's cluster states from the pending changes when
// every changed cluster's latest change carried its state, and reports whether that is all the
// reconcile needs: the clusters are known, and only their health changed (onlyHealthChanged).
// Otherwise it leaves the observation as it was, for the reconcile to read it again. The
// starter sends one cluster's changes one after another, each with the state it then held,
// so the latest change of a cluster carries its latest state; the safety resync's full
// reconcile reads everything again.
func (r *reconciler) healthFromSignals(ctx workflow.Context, pending Pending, now time.Time) bool {
	if len(pending.States) == 0 || workflow.GetVersion(ctx, changeHealthFromSignals, workflow.DefaultVersion, 1) != 1 {
		return false
	}
	next, ok := withClusterStates(*r.obs, pending.Clusters, pending.States)
	if !ok || !onlyHealthChanged(*r.obs, next, r.plan, MakePlan(next, now)) {
		return false
	}
	r.obs = &next
	return true
}

// withClusterStates is obs with the named clusters' states replaced by those in states. ok is
// false when a named cluster has no state there, or obs does not hold it (it joined).
func withClusterStates(obs act.Observation, names []string, states []act.ClusterState) (_ act.Observation, ok bool) {
	obs.Clusters = slices.Clone(obs.Clusters)
	for _, name := range names {
		s := slices.IndexFunc(states, func(c act.ClusterState) bool { return c.Name == name })
		i := slices.IndexFunc(obs.Clusters, func(c act.ClusterState) bool { return c.Name == name })
		if s < 0 || i < 0 {
			return obs, false
		}
		obs.Clusters[i] = states[s]
	}
	return obs, true
}

// onlyHealthChanged tells whether next differs from prev in the health of clusters alone
// (Ready and since when), and withdraws or restores no provider: what a Ready flip within the
// grace looks like. A provider withdrawn or restored changes what consumers receive, and a
// cluster added, removed or switched to Pull changes who takes part: those take a full
// reconcile.
func onlyHealthChanged(prev, next act.Observation, prevPlan, nextPlan Plan) bool {
	if !slices.Equal(prevPlan.Withdrawn, nextPlan.Withdrawn) {
		return false
	}
	// DeepEqual's result does not depend on the order it visits map entries in.
	//workflowcheck:ignore
	return reflect.DeepEqual(withoutHealth(withoutWorkCache(prev)), withoutHealth(withoutWorkCache(next)))
}

// withoutHealth is obs with the clusters' Ready and Since cleared.
func withoutHealth(obs act.Observation) act.Observation {
	obs.Clusters = slices.Clone(obs.Clusters)
	for i := range obs.Clusters {
		obs.Clusters[i].Ready, obs.Clusters[i].Since = false, time.Time{}
	}
	return obs
}
