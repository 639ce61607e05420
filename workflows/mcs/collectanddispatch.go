package mcs

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// The second generation of the slice path: each provider change of a partial reconcile
// collected and dispatched by one activity.

// changeCollectAndDispatch versions a provider's slice change handled by one activity that
// collects and dispatches at once, in place of collecting first and dispatching after.
const changeCollectAndDispatch = "collect-and-dispatch"

// collectAndDispatch handles the slice changes of providers on a partial reconcile: one
// activity per changed provider collects its slices and dispatches them to each of its
// consumers at once, so that no consumer waits for the collected Work to be written.
func (r *reconciler) collectAndDispatch(ctx workflow.Context, plan Plan, obs act.Observation, pending Pending) bool {
	type call struct {
		in     act.CollectAndDispatchInput
		future workflow.Future
	}
	unready := notReady(obs.Clusters)
	var calls []call
	for _, p := range plan.Providers {
		if !slices.Contains(pending.Providers, p) || slices.Contains(plan.Withdrawn, p) {
			continue
		}
		in := act.CollectAndDispatchInput{MCS: r.ref, Provider: p, EarlierWrites: r.earlierWrites()}
		var consumers []string
		for _, c := range plan.Consumers {
			if !slices.Contains(plan.Sources(c), p) {
				continue
			}
			d := act.DispatchInput{MCS: r.ref, Consumer: c, Providers: []string{p}, Ports: obs.Ports, DetectedAt: pending.DetectedAt}
			if slices.Contains(unready, c) {
				d.Unready = []string{c}
			}
			in.Dispatch = append(in.Dispatch, d)
			consumers = append(consumers, c)
		}
		work := summary.Local(ctx, "collect EndpointSlices of %s from %s and dispatch them to %s", r.ref, p, summary.List(consumers))
		calls = append(calls, call{in, workflow.ExecuteLocalActivity(work, activities.CollectAndDispatch, in)})
	}
	anyChanged := false
	failed := map[string]bool{} // consumers, over every provider's call
	var dispatched []string
	for _, c := range calls {
		p := c.in.Provider
		var res act.CollectAndDispatchResult
		err := c.future.Get(ctx, &res)
		r.reportWrite(res.WorkCache, err)
		if err != nil {
			r.collectErrs[p] = errorMessage(err)
			continue
		}
		r.state.Slices[p] = res.Collect.Slices
		if res.CollectErr != "" {
			r.collectErrs[p] = res.CollectErr
		} else {
			delete(r.collectErrs, p)
		}
		for _, d := range c.in.Dispatch {
			if msg, ok := res.DispatchErrs[d.Consumer]; ok {
				r.dispatchErr[d.Consumer], failed[d.Consumer] = msg, true
				continue
			}
			dispatched = append(dispatched, d.Consumer)
			anyChanged = anyChanged || res.Dispatched[d.Consumer].Changed
		}
	}
	for _, c := range dispatched {
		if !failed[c] {
			delete(r.dispatchErr, c)
		}
	}
	return anyChanged
}
