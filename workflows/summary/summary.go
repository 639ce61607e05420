// Package summary makes a workflow readable in the Temporal UI: it puts a one-line summary of
// what a step does on its activity options (the SDK's user metadata, shown beside the step in
// the event history), and formats the names, counts, times and errors of the short markdown
// status each workflow writes as its current details (the workflow composes and sets that).
// Both are metadata only: they never change a workflow's command sequence, so adding or
// rewording them needs no workflow.GetVersion.
package summary

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"
)

// Local returns ctx whose local activities carry the summary format makes of args.
func Local(ctx workflow.Context, format string, args ...any) workflow.Context {
	opts := workflow.GetLocalActivityOptions(ctx)
	opts.Summary = fmt.Sprintf(format, args...)
	return workflow.WithLocalActivityOptions(ctx, opts)
}

// Activity returns ctx whose activities carry the summary format makes of args.
func Activity(ctx workflow.Context, format string, args ...any) workflow.Context {
	opts := workflow.GetActivityOptions(ctx)
	opts.Summary = fmt.Sprintf(format, args...)
	return workflow.WithActivityOptions(ctx, opts)
}

// maxListed is how many names List spells out.
const maxListed = 5

// List joins names for a summary or details: the first few, then how many more; "none" when
// there are none.
func List(names []string) string {
	switch {
	case len(names) == 0:
		return "none"
	case len(names) <= maxListed:
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListed], ", ") + " and " + strconv.Itoa(len(names)-maxListed) + " more"
}

// Count says how many of noun there are: "1 EndpointSlice", "3 EndpointSlices".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Time formats a workflow time for details, in UTC to the second.
func Time(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.DateTime) + " UTC"
}

// maxError is how much of an error message details show.
const maxError = 200

// Error shortens an error message for details to one line of at most maxError characters.
func Error(message string) string {
	runes := []rune(strings.Join(strings.Fields(message), " "))
	if len(runes) <= maxError {
		return string(runes)
	}
	return string(runes[:maxError]) + "…"
}
