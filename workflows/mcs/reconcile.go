package mcs

import (
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// The reconcile policy: what one pass does given the observation and what is pending, up to
// removing everything when the object goes.

// reconcile does what is pending and reports whether the workflow is finished (the object is
// gone and everything it caused removed).
func (r *reconciler) reconcile(ctx workflow.Context) (finished bool) {
	pending := r.pending
	r.pending = Pending{}
	r.state.Reconciles++
	now := workflow.Now(ctx)
	// A reconcile replayed from history ran elsewhere, or before this process last loaded the
	// workflow: only one that runs here makes the Works known to this process.
	runsHere := !workflow.IsReplaying(ctx)
	switch {
	case !r.worksUnread:
		r.othersWroteBefore = time.Time{}
	case !r.readHere:
		r.othersWroteBefore = earlierWritesEnd(r.lastReconcileEnd, workflow.GetInfo(ctx))
		r.readHere = runsHere
	}
	defer func() { r.lastReconcileEnd = workflow.Now(ctx) }()
	r.beginWorkCacheReports(ctx)
	defer r.settleWorkCache(ctx)

	targeted := r.targetedClusters(ctx, pending)
	if len(pending.Clusters) > 0 && !targeted {
		pending.Full = true
	}
	switch {
	case targeted && r.healthFromSignals(ctx, pending, now):
		// The signals said what changed, and it is health alone: nothing to read.
	case pending.Full || r.obs == nil || targeted:
		var obs act.Observation
		observe := summary.Local(ctx, "read MultiClusterService %s, its Service and the Clusters", r.ref)
		if err := workflow.ExecuteLocalActivity(observe, activities.ObserveMCS, r.ref).Get(ctx, &obs); err != nil {
			r.fail(ctx, now, PhaseObservationError)
			return false
		}
		r.reportWorkCache(obs.WorkCache)
		if targeted && onlyHealthChanged(*r.obs, obs, r.plan, MakePlan(obs, now)) {
			r.obs = &obs // the status says what changed; the Works stay as they are
		} else {
			r.obs, r.lastFull, r.state.LastFullRun = &obs, now, now
			r.state.Generation = obs.Generation
			pending.Full = true
		}
	}
	obs := *r.obs

	switch {
	case !obs.Exists || obs.Deleting:
		return r.remove(ctx, now, obs)
	case !obs.HasFinalizer:
		add := summary.Local(ctx, "add the finalizer to MultiClusterService %s", r.ref)
		if err := workflow.ExecuteLocalActivity(add, activities.AddFinalizer, r.ref).Get(ctx, nil); err != nil {
			r.fail(ctx, now, PhaseReconciling)
			return false
		}
		r.obs.HasFinalizer = true
	}

	switch {
	case len(obs.Invalid) > 0:
		// No retries: nothing changes until the spec does.
		r.settle(ctx, PhaseInvalid, serviceOnlyConditions(networkingv1alpha1.ReasonInvalidSpec, "invalid spec: "+strings.Join(obs.Invalid, "; ")))
		return false
	case !obs.CrossCluster:
		if r.deleteWorks(ctx, now) {
			r.settle(ctx, PhaseUnsupported, serviceOnlyConditions(networkingv1alpha1.ReasonUnsupportedType,
				"type LoadBalancer needs a cloud load balancer, which karmadaflow does not provide; only CrossCluster is served"))
		}
		return false
	case !obs.ServiceExists:
		if r.deleteWorks(ctx, now) {
			r.settle(ctx, PhaseWaitingForSvc, serviceOnlyConditions(networkingv1alpha1.ReasonServiceAppliedFailed,
				"Service "+r.ref.String()+" not found in the control plane"))
		}
		return false
	}

	plan := MakePlan(obs, now)
	r.plan = plan
	r.state.Providers, r.state.Consumers, r.state.Withdrawn = plan.Providers, plan.Consumers, plan.Withdrawn
	r.state.Unknown = union(plan.UnknownProviders, plan.UnknownConsumers)
	failed := false
	var out Outcome

	if pending.Full {
		in := act.PropagateServiceInput{MCS: r.ref, Clusters: plan.ServiceClusters(), Ports: obs.Ports, DetectedAt: pending.DetectedAt,
			Unready: notReady(obs.Clusters), EarlierWrites: r.earlierWrites()}
		propagate := summary.Local(ctx, "propagate Service %s to %s", r.ref, summary.List(in.Clusters))
		var res act.WorkWriteResult
		err := workflow.ExecuteLocalActivity(propagate, activities.PropagateService, in).Get(ctx, &res)
		r.reportWrite(res.WorkCache, err)
		if err != nil {
			out.ServiceErr, failed = errorMessage(err), true
		}
	}

	if pending.Full && !r.prune(ctx, plan) {
		failed = true
	}
	var dispatchChanged bool
	if !pending.Full && len(pending.Providers) > 0 && !anyPull(obs, pending.Providers) &&
		workflow.GetVersion(ctx, changeCollectAndDispatch, workflow.DefaultVersion, 1) == 1 {
		dispatchChanged = r.collectAndDispatch(ctx, plan, obs, pending)
	} else {
		dispatchChanged = r.dispatch(ctx, plan, obs, pending, r.collect(ctx, plan, pending))
	}
	if pending.Full || pending.Applied || dispatchChanged {
		in := act.ObserveAppliedInput{MCS: r.ref, Consumers: plan.Consumers, Announced: pending.Applied,
			EarlierWrites: r.earlierWrites()}
		observe := summary.Local(ctx, "check that the EndpointSlices of %s are applied in %s", r.ref, summary.List(in.Consumers))
		if err := workflow.ExecuteLocalActivity(observe, activities.ObserveApplied, in).Get(ctx, &r.applied); err != nil {
			failed = true
		}
	}
	failed = failed || len(r.collectErrs) > 0 || len(r.dispatchErr) > 0
	if pending.Members {
		resyncExecution(ctx, idPrefix(ctx, r.ref), plan.ServiceClusters())
	}

	out.CollectErrs, out.DispatchErr, out.Applied = r.collectErrs, r.dispatchErr, r.applied
	for _, c := range obs.Clusters {
		if !c.Ready && slices.Contains(plan.Consumers, c.Name) {
			out.Unreachable = append(out.Unreachable, c.Name)
		}
	}
	phase := PhaseReady
	if failed || len(plan.Withdrawn) > 0 || len(r.state.Unknown) > 0 {
		phase = PhaseDegraded
	}
	r.writeStatus(ctx, conditions(plan, out))
	r.setPhase(ctx, phase)
	if failed {
		r.scheduleRetry(now)
	} else {
		r.state.Failures, r.retryAt = 0, time.Time{}
		if runsHere { // a reconcile that started live ran live to its end
			r.worksUnread = false
		}
	}
	return false
}

// earlierWritesEnd is until when earlier reconciles of the workflow may have written its
// Works: the end of the last reconcile of this run, else, for a run that continued another,
// its start; zero for the first run's first reconcile, which nothing preceded.
func earlierWritesEnd(lastReconcileEnd time.Time, info *workflow.Info) time.Time {
	switch {
	case !lastReconcileEnd.IsZero():
		return lastReconcileEnd
	case info.ContinuedExecutionRunID != "":
		return info.WorkflowStartTime
	default:
		return time.Time{}
	}
}

// notReady names the clusters that are not Ready.
func notReady(clusters []act.ClusterState) []string {
	var names []string
	for _, c := range clusters {
		if !c.Ready {
			names = append(names, c.Name)
		}
	}
	return names
}

// prune removes the collected Works of clusters that are no longer providers and the
// dispatched Works of clusters that are no longer consumers.
func (r *reconciler) prune(ctx workflow.Context, plan Plan) bool {
	collected := workflow.ExecuteLocalActivity(summary.Local(ctx, "delete the EndpointSlices of %s collected from clusters other than %s", r.ref, summary.List(plan.Providers)),
		activities.DeleteWorks, act.DeleteWorksInput{MCS: r.ref, Roles: []string{naming.RoleCollected}, ExceptClusters: plan.Providers,
			Prune: true, EarlierWrites: r.earlierWrites()})
	dispatched := workflow.ExecuteLocalActivity(summary.Local(ctx, "delete the EndpointSlices of %s dispatched to clusters other than %s", r.ref, summary.List(plan.Consumers)),
		activities.DeleteWorks, act.DeleteWorksInput{MCS: r.ref, Roles: []string{naming.RoleDispatched}, ExceptClusters: plan.Consumers,
			Prune: true, EarlierWrites: r.earlierWrites()})
	var resCollected, resDispatched act.WorkWriteResult
	errCollected, errDispatched := collected.Get(ctx, &resCollected), dispatched.Get(ctx, &resDispatched)
	r.reportWrite(resCollected.WorkCache, errCollected)
	r.reportWrite(resDispatched.WorkCache, errDispatched)
	return errCollected == nil && errDispatched == nil
}

// remove deletes every Work of the MultiClusterService, then releases the finalizer.
func (r *reconciler) remove(ctx workflow.Context, now time.Time, obs act.Observation) bool {
	r.setPhase(ctx, PhaseDeleted)
	if !r.deleteWorks(ctx, now) {
		return false
	}
	if obs.Exists && obs.HasFinalizer {
		release := summary.Local(ctx, "remove the finalizer from MultiClusterService %s", r.ref)
		if err := workflow.ExecuteLocalActivity(release, activities.RemoveFinalizer, r.ref).Get(ctx, nil); err != nil {
			r.fail(ctx, now, PhaseDeleted)
			return false
		}
	}
	return true
}

func (r *reconciler) deleteWorks(ctx workflow.Context, now time.Time) bool {
	remove := summary.Local(ctx, "delete every Work of %s in every cluster", r.ref)
	var res act.WorkWriteResult
	err := workflow.ExecuteLocalActivity(remove, activities.DeleteWorks, act.DeleteWorksInput{MCS: r.ref}).Get(ctx, &res)
	r.reportWrite(res.WorkCache, err)
	if err != nil {
		r.fail(ctx, now, r.state.Phase)
		return false
	}
	r.state.Slices = map[string][]act.SliceRef{}
	return true
}

// resyncExecution asks the Work execution workflow of each cluster to re-apply its Works. A
// cluster without one (Work execution left to Karmada) is skipped.
func resyncExecution(ctx workflow.Context, prefix string, clusters []string) {
	futures := make([]workflow.Future, 0, len(clusters))
	for _, c := range clusters {
		futures = append(futures, workflow.SignalExternalWorkflow(ctx, prefix+execution.WorkflowID(c), "", execution.SignalResync, nil))
	}
	for _, f := range futures {
		_ = f.Get(ctx, nil)
	}
}
