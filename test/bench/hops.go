package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// hop is one step of the hot path as the processes' own histograms see it.
type hop struct {
	name      string
	component string   // whose /metrics
	metric    string   // histogram name
	labels    []string // each must appear in the series' labels ("key=value")
}

// hotPathHops are the steps between a provider's slice change and the consumer's slice, in
// order. The watches at both ends are the bench's own (the stage table above).
var hotPathHops = []hop{
	{"signal: the starter's signal to the MultiClusterService workflow", "starter",
		"temporal_request_latency_seconds", []string{"operation=SignalWorkflowExecution"}},
	{"workflow task: scheduled → picked up by the worker", "worker",
		"temporal_workflow_task_schedule_to_start_latency_seconds", []string{"workflow_type=MultiClusterService"}},
	{"workflow task: run, its local activities included", "worker",
		"temporal_workflow_task_execution_latency_seconds", []string{"workflow_type=MultiClusterService"}},
	{"activity: CollectAndDispatch (read the provider's slices; write the collected Work and, at the same time, each consumer's Work while applying it there; record Applied)", "worker",
		"temporal_local_activity_execution_latency_seconds", []string{"activity_type=CollectAndDispatch"}},
	{"activity: CollectEndpointSlices (full reconciles: read the provider's slices, write the collected Work)", "worker",
		"temporal_local_activity_execution_latency_seconds", []string{"activity_type=CollectEndpointSlices"}},
	{"activity: DispatchEndpointSlices (full reconciles: write the consumer's Work, apply it there, record Applied)", "worker",
		"temporal_local_activity_execution_latency_seconds", []string{"activity_type=DispatchEndpointSlices"}},
	{"activity: ObserveApplied", "worker",
		"temporal_local_activity_execution_latency_seconds", []string{"activity_type=ObserveApplied"}},
	{"API read: GET (control plane and members)", "worker", "rest_client_request_duration_seconds", []string{"verb=GET"}},
	{"API read: LIST (control plane and members)", "worker", "rest_client_request_duration_seconds", []string{"verb=LIST"}},
	{"API write: PATCH (server-side apply of Works and member objects)", "worker", "rest_client_request_duration_seconds", []string{"verb=PATCH"}},
	{"API write: PUT (Work status)", "worker", "rest_client_request_duration_seconds", []string{"verb=PUT"}},
	{"Work execution's workflow tasks (what execution still does)", "worker",
		"temporal_workflow_task_execution_latency_seconds", []string{"workflow_type=WorkExecution"}},
}

// hopSection reports, per hop of the hot path, how often it ran over the updates and how long it
// took, from the histograms scraped before and after.
func hopSection(r *Report, before, after map[string]Snapshot, updates int) {
	r.Printf("\nPer hop (each process's own histograms over the updates; n is the hops' count for %d updates; "+
		"several series, e.g. one per API server, are merged):\n\n", updates)
	var rows [][]string
	for _, h := range hotPathHops {
		if before[h.component] == nil || after[h.component] == nil {
			continue
		}
		merged, ok := mergeHistograms(HistogramDeltas(before[h.component], after[h.component], h.metric), h.metric, h.labels)
		if !ok {
			rows = append(rows, []string{h.name, h.component, "0", "-", "-", "-", "-"})
			continue
		}
		q := func(p float64) string {
			v, above := merged.Quantile(p)
			if above {
				return ">" + FormatSeconds(v)
			}
			return FormatSeconds(v)
		}
		rows = append(rows, []string{h.name, h.component, fmt.Sprint(merged.Count), FormatSeconds(merged.Mean()), q(0.5), q(0.9), q(0.99)})
	}
	r.Table([]string{"hop", "process", "n", "mean", "~p50", "~p90", "~p99"}, rows)
}

// mergeHistograms adds up the deltas of the series of name whose labels hold every one of
// labels; false when none observed anything.
func mergeHistograms(deltas []HistogramDelta, name string, labels []string) (HistogramDelta, bool) {
	var out HistogramDelta
	found := false
	for _, d := range deltas {
		if d.Name != name || !hasLabels(d.Labels, labels) {
			continue
		}
		if !found {
			out = HistogramDelta{Name: name, bounds: d.bounds, cumulative: make([]uint64, len(d.cumulative))}
			found = true
		}
		if len(d.bounds) != len(out.bounds) {
			continue // other buckets: cannot be added up
		}
		out.Count += d.Count
		out.Sum += d.Sum
		for i := range d.cumulative {
			out.cumulative[i] += d.cumulative[i]
		}
	}
	return out, found && out.Count > 0 && !math.IsNaN(out.Mean())
}

func hasLabels(series string, labels []string) bool {
	have := strings.Split(series, ",")
	for _, l := range labels {
		if !slices.Contains(have, l) {
			return false
		}
	}
	return true
}
