package mcs

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// The first generation of the slice path: collect from the changed providers, then dispatch to
// the consumers; every full reconcile takes it.

// collect records the slices of the providers that changed (all providers on a full
// reconcile, except withdrawn ones) and returns the providers whose collected Works changed.
func (r *reconciler) collect(ctx workflow.Context, plan Plan, pending Pending) []string {
	targets := plan.Providers
	if !pending.Full {
		targets = nil
		for _, p := range plan.Providers {
			if slices.Contains(pending.Providers, p) {
				targets = append(targets, p)
			}
		}
	}
	// Deleting keys is order-independent.
	//workflowcheck:ignore
	for p := range r.collectErrs {
		if !slices.Contains(plan.Providers, p) {
			delete(r.collectErrs, p)
		}
	}
	futures := make([]workflow.Future, 0, len(targets))
	for _, p := range targets {
		if slices.Contains(plan.Withdrawn, p) {
			futures = append(futures, nil)
			continue
		}
		in := act.CollectInput{MCS: r.ref, Provider: p, EarlierWrites: r.earlierWrites()}
		if isPull(r.obs, p) && workflow.GetVersion(ctx, changePullClusters, workflow.DefaultVersion, 1) == 1 {
			futures = append(futures, collectPull(ctx, *r.obs, in))
			continue
		}
		collect := summary.Local(ctx, "collect EndpointSlices of %s from %s", r.ref, p)
		futures = append(futures, workflow.ExecuteLocalActivity(collect, activities.CollectEndpointSlices, in))
	}
	var changed []string
	for i, p := range targets {
		if futures[i] == nil {
			continue
		}
		var res act.CollectResult
		err := futures[i].Get(ctx, &res)
		r.reportWrite(res.WorkCache, err)
		if err != nil {
			r.collectErrs[p] = errorMessage(err)
			continue
		}
		delete(r.collectErrs, p)
		r.state.Slices[p] = res.Slices
		if res.Changed || pending.Full {
			changed = append(changed, p)
		}
	}
	return changed
}

// dispatch gives every consumer the slices of its sources. A full reconcile makes each
// consumer hold exactly its sources' slices; otherwise only the changed providers are synced.
// Consumers are dispatched in parallel; one consumer's failure is recorded for it alone.
func (r *reconciler) dispatch(ctx workflow.Context, plan Plan, obs act.Observation, pending Pending, changed []string) bool {
	full := pending.Full
	// Deleting keys is order-independent.
	//workflowcheck:ignore
	for c := range r.dispatchErr {
		if !slices.Contains(plan.Consumers, c) {
			delete(r.dispatchErr, c)
		}
	}
	type call struct {
		consumer string
		future   workflow.Future
	}
	unready := notReady(obs.Clusters)
	var calls []call
	for _, c := range plan.Consumers {
		in := act.DispatchInput{MCS: r.ref, Consumer: c, Ports: obs.Ports, Exclusive: full, DetectedAt: pending.DetectedAt,
			EarlierWrites: r.earlierWrites()}
		if slices.Contains(unready, c) {
			in.Unready = []string{c}
		}
		for _, p := range plan.Sources(c) {
			if full || slices.Contains(changed, p) {
				in.Providers = append(in.Providers, p)
			}
		}
		if !full && len(in.Providers) == 0 {
			continue
		}
		in.CollectedByAgents = anyPull(obs, in.Providers)
		calls = append(calls, call{c, workflow.ExecuteLocalActivity(r.dispatchSummary(ctx, in), activities.DispatchEndpointSlices, in)})
	}
	anyChanged := false
	for _, c := range calls {
		var res act.DispatchResult
		err := c.future.Get(ctx, &res)
		r.reportWrite(res.WorkCache, err)
		if err != nil {
			r.dispatchErr[c.consumer] = errorMessage(err)
			continue
		}
		delete(r.dispatchErr, c.consumer)
		anyChanged = anyChanged || res.Changed
	}
	return anyChanged
}
