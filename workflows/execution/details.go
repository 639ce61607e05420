package execution

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// What a run shows in the Temporal UI: the summaries of its activities and its current details.

// applySummary says what an ApplyWorks call does.
func applySummary(in act.ApplyInput) string {
	if in.All {
		return "apply every Work of " + in.Cluster + " (a full pass)"
	}
	return fmt.Sprintf("apply %d changed Works to %s: %s", len(in.Works), in.Cluster, summary.List(in.Works))
}

// describe sets the current details the Temporal UI shows: what the last pass did, what failed
// and when it is retried.
func describe(ctx workflow.Context, cluster string, state State, retryAt time.Time) {
	var lines []string
	lines = append(lines, fmt.Sprintf("**Work execution of %s**\n", cluster))
	lines = append(lines, fmt.Sprintf("- passes: %d, last at %s", state.Reconciles, summary.Time(workflow.Now(ctx))))
	lines = append(lines, fmt.Sprintf("- last full pass: %s", summary.Time(state.LastFull)))
	lines = append(lines, fmt.Sprintf("- applied %d, deleted %d in all", state.Applied, state.Deleted))
	if len(state.Failed) == 0 {
		lines = append(lines, "- no retry pending")
	} else {
		failed := slices.Clone(state.Failed)
		if i := slices.Index(failed, "*"); i >= 0 {
			failed[i] = "the full pass"
		}
		lines = append(lines, fmt.Sprintf("- failed, retried at %s: %s", summary.Time(retryAt), summary.List(failed)))
	}
	if state.LastError != "" {
		lines = append(lines, fmt.Sprintf("- last error: %s", summary.Error(state.LastError)))
	}
	workflow.SetCurrentDetails(ctx, strings.Join(lines, "\n"))
}
