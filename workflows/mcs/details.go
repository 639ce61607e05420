package mcs

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// dispatchSummary returns ctx whose local activity says what a dispatch does: how many of the
// slices collected from which providers go to the consumer, and whether they replace all the
// consumer holds.
func (r *reconciler) dispatchSummary(ctx workflow.Context, in act.DispatchInput) workflow.Context {
	if len(in.Providers) == 0 {
		return summary.Local(ctx, "remove the EndpointSlices of %s from %s: no provider serves it", r.ref, in.Consumer)
	}
	slices := 0
	for _, p := range in.Providers {
		slices += len(r.state.Slices[p])
	}
	if in.Exclusive {
		return summary.Local(ctx, "dispatch %s of %s from %s to %s, replacing all it holds",
			summary.Count(slices, "EndpointSlice"), r.ref, summary.List(in.Providers), in.Consumer)
	}
	return summary.Local(ctx, "dispatch %s of %s from %s to %s",
		summary.Count(slices, "EndpointSlice"), r.ref, summary.List(in.Providers), in.Consumer)
}

// conditionList spells conditions as Type=Status pairs.
func conditionList(conds []act.Condition) string {
	pairs := make([]string, 0, len(conds))
	for _, c := range conds {
		pairs = append(pairs, c.Type+"="+c.Status)
	}
	return summary.List(pairs)
}

// describe sets the current details the Temporal UI shows: the phase, who takes part, how the
// last pass ended and what is due next.
func (r *reconciler) describe(ctx workflow.Context) {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: MultiClusterService %s, generation %d\n\n", r.state.Phase, r.ref, r.state.Generation)
	fmt.Fprintf(&b, "- providers: %s\n", summary.List(r.state.Providers))
	fmt.Fprintf(&b, "- consumers: %s\n", summary.List(r.state.Consumers))
	if len(r.state.Withdrawn) > 0 {
		fmt.Fprintf(&b, "- withdrawn providers: %s\n", summary.List(r.state.Withdrawn))
	}
	if len(r.state.Unknown) > 0 {
		fmt.Fprintf(&b, "- clusters not found: %s\n", summary.List(r.state.Unknown))
	}
	fmt.Fprintf(&b, "- last pass (#%d, %s): %s\n", r.state.Reconciles, summary.Time(workflow.Now(ctx)), conditionList(r.state.Conditions))
	for _, c := range r.state.Conditions {
		if c.Status != "True" {
			fmt.Fprintf(&b, "  - %s: %s\n", c.Reason, summary.Error(c.Message))
		}
	}
	if r.failures > 0 {
		fmt.Fprintf(&b, "- retry %d due at %s\n", r.failures, summary.Time(r.retryAt))
	} else {
		b.WriteString("- no retry pending\n")
	}
	fmt.Fprintf(&b, "- next full pass: %s\n", summary.Time(r.wakeUpAt()))
	workflow.SetCurrentDetails(ctx, b.String())
}
