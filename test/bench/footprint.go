package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// Footprint reports the memory of the worker and starter and the size of the workflow
// histories after the run.
func (b *Bench) Footprint(ctx context.Context, r *Report, runStart time.Time) error {
	r.Heading(2, "(c) After the run: memory and workflow histories")
	var rows [][]string
	for _, c := range components {
		pid := b.Service.PID(c)
		if pid == 0 {
			rows = append(rows, []string{c, "not running", "", "", ""})
			continue
		}
		mem, err := ReadMemory(pid)
		if err != nil {
			rows = append(rows, []string{c, fmt.Sprint(pid), err.Error(), "", ""})
			continue
		}
		cpu, _ := CPUTime(pid)
		rows = append(rows, []string{c, fmt.Sprint(pid), FormatBytes(mem.PeakRSS), FormatBytes(mem.RSS),
			fmt.Sprintf("%s over %s", FormatDuration(cpu), FormatDuration(time.Since(runStart)))})
	}
	r.Table([]string{"process", "pid", "peak RSS (VmHWM)", "current RSS (VmRSS)", "CPU time used"}, rows)

	execs, err := b.listWorkflows(ctx)
	if err != nil {
		r.Printf("\nListing workflows failed: %v\n", err)
		return err
	}
	// Visibility records of open runs can lag their history; describe those for the real length.
	b.refreshOpen(ctx, execs)

	byStatus := map[string]int{}
	byType := map[string]int{}
	for _, e := range execs {
		byStatus[statusName(e.GetStatus())]++
		byType[e.GetType().GetName()]++
	}
	r.Printf("\n%d workflow runs in namespace %s. By status: %s. By type: %s. Continued-as-new runs: %d.\n\n",
		len(execs), b.Env.Temporal.Namespace, formatCounts(byStatus), formatCounts(byType),
		byStatus[statusName(enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW)])

	sort.SliceStable(execs, func(i, j int) bool { return execs[i].GetHistoryLength() > execs[j].GetHistoryLength() })
	rows = nil
	for _, e := range execs[:min(10, len(execs))] {
		rows = append(rows, []string{"`" + e.GetExecution().GetWorkflowId() + "`", e.GetType().GetName(), statusName(e.GetStatus()),
			fmt.Sprint(e.GetHistoryLength()), FormatBytes(e.GetHistorySizeBytes())})
	}
	r.Printf("Largest histories:\n\n")
	r.Table([]string{"workflow ID", "type", "status", "history events", "history size"}, rows)
	lengths := map[string][]int64{}
	for _, e := range execs {
		lengths[e.GetType().GetName()] = append(lengths[e.GetType().GetName()], e.GetHistoryLength())
	}
	rows = nil
	for _, typ := range slices.Sorted(maps.Keys(lengths)) {
		l := lengths[typ]
		slices.Sort(l)
		var total int64
		for _, v := range l {
			total += v
		}
		rows = append(rows, []string{typ, fmt.Sprint(len(l)), fmt.Sprint(l[len(l)/2]), fmt.Sprint(total / int64(len(l))), fmt.Sprint(l[len(l)-1])})
	}
	r.Printf("\nHistory events per workflow type:\n\n")
	r.Table([]string{"type", "runs", "median", "mean", "max"}, rows)
	b.historyBreakdown(ctx, r, mcs.WorkflowID(coldNamespace, coldName(0)))
	return nil
}

// historyBreakdown counts the events of one workflow's history by type, to show what a
// typical run spends its history on.
func (b *Bench) historyBreakdown(ctx context.Context, r *Report, workflowID string) {
	c, err := b.Temporal()
	if err != nil {
		return
	}
	counts := map[string]int{}
	total := 0
	iter := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		if err != nil {
			r.Printf("\nReading the history of `%s` failed: %v\n", workflowID, err)
			return
		}
		counts[strings.TrimPrefix(event.GetEventType().String(), "EventType")]++
		total++
	}
	if total == 0 {
		return
	}
	var rows [][]string
	for _, typ := range slices.Sorted(maps.Keys(counts)) {
		rows = append(rows, []string{typ, fmt.Sprint(counts[typ])})
	}
	r.Printf("\nThe %d events of `%s` (a typical cold-start MultiClusterService), by type:\n\n", total, workflowID)
	r.Table([]string{"event type", "events"}, rows)
}

// listWorkflows lists every run of the namespace through visibility, page by page.
func (b *Bench) listWorkflows(ctx context.Context) ([]*workflowpb.WorkflowExecutionInfo, error) {
	c, err := b.Temporal()
	if err != nil {
		return nil, err
	}
	var out []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: b.Env.Temporal.Namespace, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("listing workflows: %w", err)
		}
		out = append(out, resp.GetExecutions()...)
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

// refreshOpen replaces the visibility records of running workflows by their current
// description (history length and size), 8 at a time; failures keep the listed record.
func (b *Bench) refreshOpen(ctx context.Context, execs []*workflowpb.WorkflowExecutionInfo) {
	c, err := b.Temporal()
	if err != nil {
		return
	}
	var open []int
	for i, e := range execs {
		if e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			open = append(open, i)
		}
	}
	var mu sync.Mutex
	_ = parallel(ctx, len(open), 8, func(ctx context.Context, j int) error {
		i := open[j]
		e := execs[i]
		resp, err := c.DescribeWorkflowExecution(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
		if err != nil || resp.GetWorkflowExecutionInfo() == nil {
			return err
		}
		mu.Lock()
		execs[i] = resp.GetWorkflowExecutionInfo()
		mu.Unlock()
		return nil
	})
}

func statusName(s enumspb.WorkflowExecutionStatus) string {
	return strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_")
}

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
