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
	var lines []string
	lines = append(lines, fmt.Sprintf("**%s**: MultiClusterService %s, generation %d\n", r.state.Phase, r.ref, r.state.Generation))
	lines = append(lines, fmt.Sprintf("- providers: %s", summary.List(r.state.Providers)))
	lines = append(lines, fmt.Sprintf("- consumers: %s", summary.List(r.state.Consumers)))
	if len(r.state.Withdrawn) > 0 {
		lines = append(lines, fmt.Sprintf("- withdrawn providers: %s", summary.List(r.state.Withdrawn)))
	}
	if len(r.state.Unknown) > 0 {
		lines = append(lines, fmt.Sprintf("- clusters not found: %s", summary.List(r.state.Unknown)))
	}
	lines = append(lines, fmt.Sprintf("- last pass (#%d, %s): %s", r.state.Reconciles, summary.Time(workflow.Now(ctx)), conditionList(r.state.Conditions)))
	for _, c := range r.state.Conditions {
		if c.Status != "True" {
			lines = append(lines, fmt.Sprintf("  - %s: %s", c.Reason, summary.Error(c.Message)))
		}
	}
	if r.state.Failures > 0 {
		lines = append(lines, fmt.Sprintf("- retry %d due at %s", r.state.Failures, summary.Time(r.retryAt)))
	} else {
		lines = append(lines, "- no retry pending")
	}
	lines = append(lines, fmt.Sprintf("- next full pass: %s", summary.Time(r.wakeUpAt())))
	workflow.SetCurrentDetails(ctx, strings.Join(lines, "\n"))
}
