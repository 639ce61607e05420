package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// FlapOptions configure the member-flap measurement: a member's Ready condition flips to False
// and back Flaps times while (b)'s MultiClusterServices run, and a stream of slice changes of
// a MultiClusterService that does not involve the member runs throughout.
type FlapOptions struct {
	Flaps int
	// Count is how many of (b)'s MultiClusterServices exist (its -cold-count).
	Count int
	// Member is the Cluster flapped; empty: (b)'s first consumer, which every one of them involves.
	Member string
	// Interval is the time between two writes of the unrelated stream.
	Interval time.Duration
	// Baseline is how long the stream runs alone before the first flap, to tell its own cost.
	Baseline time.Duration
	// Settle bounds the wait for one flap's work to end.
	Settle time.Duration
}

// flapStream is the unrelated MultiClusterService whose slice changes run during the flaps.
var flapStream = stream{namespace: "bench", service: "flap", slice: "flap-bench"}

// evenSample picks about n of ids, evenly spread.
func evenSample(ids []string, n int) []string {
	var sample []string
	for i := 0; i < len(ids); i += max(1, len(ids)/n) {
		sample = append(sample, ids[i])
	}
	return sample
}

// flapReason is the reason of the Ready=False the benchmark writes, as a health controller
// would with its own.
const flapReason = "BenchFlap"

// flapSample is how many of the MultiClusterService workflows are watched to tell when a
// flap's work has ended: describing all of them every half second would itself load Temporal.
const flapSample = 25

// flap is what one flap did, as the benchmark saw it.
type flap struct {
	start        time.Time     // just before Ready=False was written
	falseSeen    time.Duration // since start, by the Cluster watch
	trueSeen     time.Duration // since start, by the Cluster watch
	trueReason   string        // of the Ready=True that came back
	restoredHere bool          // the benchmark wrote Ready=True, nothing else did in time
	settled      time.Duration // since start, when the sampled workflows were idle
	settleErr    error
}

// Flaps flips the Ready condition of a member that every cold-start MultiClusterService
// involves to False and back opts.Flaps times, waiting after each until the workflows are idle,
// and reports the history events the MultiClusterService workflows wrote and the CPU each
// process used per flap, and the latency of an unrelated stream of slice changes meanwhile.
// It needs (b)'s MultiClusterServices and the Cluster watch of WatchClusters.
func (b *Bench) Flaps(ctx context.Context, r *Report, opts FlapOptions) error {
	r.Heading(2, fmt.Sprintf("(f) A member flaps %d times with %d MultiClusterServices running", opts.Flaps, opts.Count))
	member, provider, consumers, prefix, err := b.flapClusters(opts.Member)
	if err != nil {
		return err
	}
	if _, _, known := b.health.ready(member); !known {
		return fmt.Errorf("no Ready condition of Cluster %s seen: the Cluster watch (WatchClusters) is not running", member)
	}
	r.Printf("The %d MultiClusterServices of (b) (namespace %s) all involve %s. A flap: the benchmark writes the Cluster's "+
		"Ready condition False (status subresource, reason %s, a new lastTransitionTime), as a health controller would, and "+
		"waits until it is True again. It does not write True itself: the starter, seeing the change, signals the cluster's "+
		"health workflow with a resync, whose probe finds the member answering and writes True (reason %s) at once; only if "+
		"nothing did within 30 s would the benchmark write it. The next flap starts when %d of the workflows, evenly spread, "+
		"have each grown their history since the flap began and have been idle (no pending workflow task or activity, "+
		"history unchanged) for two polls 500 ms apart. The whole time, a stream of slice changes runs on MultiClusterService "+
		"%s/%s (provider %s, consumers %v), which does not involve %s: alone for %s first (the baseline), then during the flaps; "+
		"one change every %s.\n\n",
		opts.Count, coldNamespace, member, flapReason, health.ReasonClusterReady, flapSample,
		flapStream.namespace, flapStream.service, provider, consumers, member, FormatDuration(opts.Baseline), opts.Interval)

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen, err := b.setupStream(ctx, r, flapStream, provider, consumers, prefix)
	if err != nil {
		return err
	}
	ids := make([]string, opts.Count)
	for i := range ids {
		ids[i] = mcs.WorkflowID(coldNamespace, coldName(i))
	}
	sample := evenSample(ids, flapSample)

	// The stream writes until the flaps end; its count is only an upper bound.
	writeCtx, stopWriting := context.WithCancel(ctx)
	defer stopWriting()
	written := make(chan updates, 1)
	go func() {
		u, _ := b.writeUpdates(writeCtx, flapStream, provider, prefix, LatencyOptions{Updates: 250*254 - 1, Interval: opts.Interval})
		written <- u
	}()

	type reading struct {
		at      time.Time
		cpu     map[string]time.Duration
		machine MachineCPU
		metrics map[string]Snapshot
		control Snapshot
	}
	read := func(ctx context.Context) reading {
		m, _ := ReadMachineCPU()
		return reading{at: time.Now(), cpu: b.cpuTimes(), machine: m, metrics: b.scrapeAll(ctx), control: b.scrapeAPIServer(ctx, b.Env.ControlPlane.Name)}
	}
	baseStart := read(ctx)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(opts.Baseline):
	}
	flapsStart := read(ctx)

	var flaps []flap
	var flapErr error
	for i := range opts.Flaps {
		f, err := b.flapOnce(ctx, member, sample, opts.Settle)
		b.Logf("bench: flap %d of %d: True again after %s, idle after %s", i+1, opts.Flaps, FormatDuration(f.trueSeen), FormatDuration(f.settled))
		flaps = append(flaps, f)
		if err != nil {
			flapErr = err
			break
		}
	}
	flapsEnd := read(context.WithoutCancel(parent))
	stopWriting()
	u := (<-written).tried()
	var settleErr error
	if last := u.lastWritten(); last != "" {
		settleErr = seen.waitSeen(ctx, consumers, last, time.Minute)
	}
	cancel() // stops the watches

	r.Printf("%d flaps in %s (%s on average from one flap's False to the next's).\n\n", len(flaps),
		FormatDuration(flapsEnd.at.Sub(flapsStart.at)), FormatDuration(flapsEnd.at.Sub(flapsStart.at)/time.Duration(max(len(flaps), 1))))
	if flapErr != nil {
		r.Printf("**The flaps stopped**: %v\n\n", flapErr)
	}

	windows := []time.Time{baseStart.at}
	for _, f := range flaps {
		windows = append(windows, f.start)
	}
	windows = append(windows, flapsEnd.at)
	counts, runs, histErr := b.windowEvents(context.WithoutCancel(parent), ids, windows)
	if histErr != nil {
		r.Printf("**Reading the histories failed**: %v\n\n", histErr)
	}
	flapTable(r, flaps, counts[1:], opts.Count)
	var total windowCounts
	for _, c := range counts[1:] {
		total.add(c)
	}
	n := max(len(flaps), 1)
	r.Printf("\nBaseline (stream alone, %s): %d events in the %d histories. Over the flaps: %d events, %d of them signals, "+
		"%d workflow tasks, %d activities; %d runs continued as new. Per flap: **%d history events** (%.1f per MultiClusterService), "+
		"%d signals, %d workflow tasks, %d activities.\n\n",
		FormatDuration(flapsStart.at.Sub(baseStart.at)), counts[0].events, opts.Count, total.events, total.signals, total.tasks,
		total.activities, runs, total.events/n, float64(total.events)/float64(n*opts.Count), total.signals/n, total.tasks/n, total.activities/n)
	r.Headline("(f) member flap: MCS history events per flap", fmt.Sprint(total.events/n))

	r.Heading(3, "CPU per flap")
	baseWall, flapWall := flapsStart.at.Sub(baseStart.at), flapsEnd.at.Sub(flapsStart.at)
	flapCPUTable(r, baseStart.cpu, flapsStart.cpu, flapsEnd.cpu, baseWall, flapWall, n,
		flapsStart.machine.Busy-baseStart.machine.Busy, flapsEnd.machine.Busy-flapsStart.machine.Busy)
	if key, d := flapHeadlineCPU(flapsStart.cpu, flapsEnd.cpu); key != "" {
		r.Headline("(f) member flap: CPU per flap ("+key+")", FormatDuration(d/time.Duration(n)))
	}
	baseSignals, flapSignals := signalsSent(baseStart.metrics, flapsStart.metrics), signalsSent(flapsStart.metrics, flapsEnd.metrics)
	if baseSignals >= 0 && flapSignals >= 0 {
		net := flapSignals - baseSignals*flapWall.Seconds()/baseWall.Seconds()
		r.Printf("\nSignals the starter sent (its temporal_request_total of Signal operations): %.0f over the baseline, %.0f over the "+
			"flaps; per flap %.0f, %.0f net of the stream's rate.\n", baseSignals, flapSignals, flapSignals/float64(n), net/float64(n))
	}
	requestSection(r, b.Env.ControlPlane.Name, flapsStart.control, flapsEnd.control)

	r.Heading(3, "The unrelated stream")
	if len(u.errs) > 0 {
		r.Printf("**%d writes failed**, first: %v\n\n", len(u.errs), u.errs[0])
	}
	if settleErr != nil {
		r.Printf("**Not everything settled**: %v\n\n", settleErr)
	}
	r.Printf("Every change of the stream, baseline and flaps (%d):\n\n", len(u.addresses))
	worst := latencyTables(r, seen, u, provider, consumers)
	var during, before []time.Duration
	var undelivered [2]int
	for i, w := range u.writes {
		switch {
		case w.IsZero() || w.After(flapsEnd.at):
		case w.Before(flapsStart.at) && worst[i] < 0:
			undelivered[0]++
		case w.Before(flapsStart.at):
			before = append(before, worst[i])
		case worst[i] < 0:
			undelivered[1]++
		default:
			during = append(during, worst[i])
		}
	}
	r.Printf("\nSlowest of the %d consumers per change, by when it was written:\n\n", len(consumers))
	r.Table([]string{"changes written", "delivered", "not delivered", "p50", "p90", "p99", "max", "mean"}, [][]string{
		append([]string{"before the flaps (baseline)", fmt.Sprint(len(before)), fmt.Sprint(undelivered[0])}, Summarize(before).cells()...),
		append([]string{"**during the flaps**", fmt.Sprint(len(during)), fmt.Sprint(undelivered[1])}, Summarize(during).cells()...),
	})
	d := Summarize(during)
	r.Headline("(f) member flaps: unrelated slice change p99", FormatDuration(d.P99))
	r.Headline("(f) member flaps: unrelated slice change max", FormatDuration(d.Max))
	r.Printf("\nMetric deltas over the flaps:\n\n")
	b.metricsSection(r, flapsStart.metrics, flapsEnd.metrics)

	if parent.Err() != nil {
		return parent.Err()
	}
	return errors.Join(flapErr, histErr)
}

// flapClusters are the member flapped (by default (b)'s first consumer) and the stream's
// provider and consumers: the other members, the first of them providing.
func (b *Bench) flapClusters(member string) (string, string, []string, netip.Prefix, error) {
	var prefix netip.Prefix
	if len(b.Env.Members) < 4 {
		return "", "", nil, prefix, fmt.Errorf("the flap measurement needs 4 members, the environment has %d", len(b.Env.Members))
	}
	if member == "" {
		member = b.Env.Members[1].Name
	}
	var others []string
	var podCIDR string
	for _, m := range b.Env.Members {
		if m.Name == member {
			continue
		}
		if len(others) == 0 {
			podCIDR = m.PodCIDR
		}
		others = append(others, m.Name)
	}
	if len(others) == len(b.Env.Members) {
		return "", "", nil, prefix, fmt.Errorf("no member %s", member)
	}
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil || prefix.Bits() > 16 || !prefix.Addr().Is4() {
		return "", "", nil, prefix, fmt.Errorf("pod CIDR %q of %s is not an IPv4 /16 or wider", podCIDR, others[0])
	}
	return member, others[0], others[1:], prefix, nil
}

// flapOnce writes the member's Ready False, waits for True, then for the sampled workflows to be
// idle.
func (b *Bench) flapOnce(ctx context.Context, member string, sample []string, settle time.Duration) (flap, error) {
	lengths, err := b.describeSample(ctx, sample)
	if err != nil {
		return flap{}, err
	}
	f := flap{start: time.Now()}
	if err := b.setReady(ctx, member, metav1.ConditionFalse, flapReason, "written by mcsbench (f) to flap the member"); err != nil {
		return f, err
	}
	at, err := b.health.waitReady(ctx, member, "False", f.start, 30*time.Second)
	if err != nil {
		return f, err
	}
	f.falseSeen = at.Sub(f.start)
	at, err = b.health.waitReady(ctx, member, "True", f.start.Add(f.falseSeen), 30*time.Second)
	if err != nil {
		f.restoredHere = true
		if err := b.setReady(ctx, member, metav1.ConditionTrue, health.ReasonClusterReady, "written by mcsbench (f): nothing restored it"); err != nil {
			return f, err
		}
		if at, err = b.health.waitReady(ctx, member, "True", f.start.Add(f.falseSeen), 30*time.Second); err != nil {
			return f, err
		}
	}
	f.trueSeen = at.Sub(f.start)
	f.trueReason = b.health.reason(member)
	f.settleErr = b.waitIdle(ctx, sample, lengths, settle)
	f.settled = time.Since(f.start)
	return f, ctx.Err()
}

// setReady writes the Cluster's Ready condition through the status subresource.
func (b *Bench) setReady(ctx context.Context, cluster string, status metav1.ConditionStatus, reason, message string) error {
	clusters := b.controlPlane().Resource(kube.Clusters)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := clusters.Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, err := kube.Conditions(obj)
		if err != nil {
			return err
		}
		meta.SetStatusCondition(&conds, metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: message,
			ObservedGeneration: obj.GetGeneration(), LastTransitionTime: metav1.Now()})
		if err := kube.SetConditions(obj, conds); err != nil {
			return err
		}
		_, err = clusters.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: "mcsbench"})
		return err
	})
}

// workflowLength is a run and its history length.
type workflowLength struct {
	runID  string
	length int64
}

// describeSample reads the current run and history length of each sampled workflow.
func (b *Bench) describeSample(ctx context.Context, sample []string) (map[string]workflowLength, error) {
	lengths, _, err := b.describeIdle(ctx, sample)
	return lengths, err
}

// describeIdle describes each sampled workflow: its run and history length, and whether it
// has a workflow task or an activity pending.
func (b *Bench) describeIdle(ctx context.Context, sample []string) (map[string]workflowLength, map[string]bool, error) {
	c, err := b.Temporal()
	if err != nil {
		return nil, nil, err
	}
	lengths, busy := map[string]workflowLength{}, map[string]bool{}
	for _, id := range sample {
		resp, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return nil, nil, fmt.Errorf("describing %s: %w", id, err)
		}
		info := resp.GetWorkflowExecutionInfo()
		lengths[id] = workflowLength{runID: info.GetExecution().GetRunId(), length: info.GetHistoryLength()}
		busy[id] = resp.GetPendingWorkflowTask() != nil || len(resp.GetPendingActivities()) > 0
	}
	return lengths, busy, nil
}

// waitIdle waits until every sampled workflow has moved on from start (another run or a longer
// history) and has been idle, its history unchanged, for two polls in a row.
func (b *Bench) waitIdle(ctx context.Context, sample []string, start map[string]workflowLength, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var prev map[string]workflowLength
	quiet := 0
	for {
		lengths, busy, err := b.describeIdle(ctx, sample)
		if err != nil {
			return err
		}
		idle := prev != nil && !b.starterQueuesBusy(ctx)
		for _, id := range sample {
			l := lengths[id]
			moved := l.runID != start[id].runID || l.length > start[id].length
			idle = idle && moved && !busy[id] && l == prev[id]
		}
		if !idle {
			quiet = 0
		} else if quiet++; quiet >= 2 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sampled workflows were not idle within %s", FormatDuration(timeout))
		}
		prev = lengths
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// starterQueuesBusy tells whether the starter still has keys queued, or is handling a
// Cluster's change: it signals the MultiClusterServices one after the other from that
// handler, so a sampled workflow may be idle while others wait for their signal. A failed
// scrape counts as busy.
func (b *Bench) starterQueuesBusy(ctx context.Context) bool {
	s, err := Scrape(ctx, b.Service.MetricsAddress("starter"))
	if err != nil {
		return true
	}
	for _, family := range []string{"workqueue_depth", "workqueue_unfinished_work_seconds"} {
		for _, m := range s[family].GetMetric() {
			clusters := slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "name" && l.GetValue() == "clusters" })
			if m.GetGauge().GetValue() > 0 && (family == "workqueue_depth" || clusters) {
				return true
			}
		}
	}
	return false
}

// ready is the last Ready status the Cluster watch saw of cluster and when.
func (h *clusterHealth) ready(cluster string) (status string, at time.Time, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.transitions) - 1; i >= 0; i-- {
		if t := h.transitions[i]; t.Cluster == cluster {
			return t.Status, t.At, true
		}
	}
	return "", time.Time{}, false
}

// reason is the reason of the last Ready transition the watch saw of cluster.
func (h *clusterHealth) reason(cluster string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.transitions) - 1; i >= 0; i-- {
		if t := h.transitions[i]; t.Cluster == cluster {
			return t.Reason
		}
	}
	return ""
}

// waitReady waits until the watch saw cluster's Ready turn to status after since, and returns
// when it saw it.
func (h *clusterHealth) waitReady(ctx context.Context, cluster, status string, since time.Time, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		if s, at, _ := h.ready(cluster); s == status && !at.Before(since) {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("Cluster %s not Ready=%s within %s", cluster, status, FormatDuration(timeout))
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// windowCounts are the history events written in one time window, some of their kinds, and
// their size (protobuf encoding).
type windowCounts struct {
	events, signals, tasks, activities, bytes int
}

func (c *windowCounts) add(o windowCounts) {
	c.events += o.events
	c.signals += o.signals
	c.tasks += o.tasks
	c.activities += o.activities
	c.bytes += o.bytes
}

// windowEvents reads the histories of workflowIDs, the current run and those it continued from
// back to bounds[0], and counts their events per window [bounds[i], bounds[i+1]) by event time
// (the Temporal server's clock, this machine's). It also returns how many runs started in the
// windows as a continuation.
func (b *Bench) windowEvents(ctx context.Context, workflowIDs []string, bounds []time.Time) ([]windowCounts, int, error) {
	c, err := b.Temporal()
	if err != nil {
		return nil, 0, err
	}
	counts := make([]windowCounts, len(bounds)-1)
	var mu sync.Mutex
	continued := 0
	err = parallel(ctx, len(workflowIDs), 8, func(ctx context.Context, i int) error {
		mine := make([]windowCounts, len(counts))
		runs := 0
		for runID := ""; ; {
			var first *historypb.HistoryEvent
			iter := c.GetWorkflowHistory(ctx, workflowIDs[i], runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for iter.HasNext() {
				e, err := iter.Next()
				if err != nil {
					return fmt.Errorf("history of %s: %w", workflowIDs[i], err)
				}
				if first == nil {
					first = e
				}
				w, ok := slices.BinarySearchFunc(bounds, e.GetEventTime().AsTime(), func(b, t time.Time) int { return b.Compare(t) })
				if !ok {
					w-- // the window whose start is before the event
				}
				if w < 0 || w >= len(mine) {
					continue
				}
				mine[w].events++
				mine[w].bytes += proto.Size(e)
				switch e.GetEventType() {
				case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
					mine[w].signals++
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
					mine[w].tasks++
				case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enumspb.EVENT_TYPE_MARKER_RECORDED:
					mine[w].activities++
				}
			}
			previous := first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
			if first == nil || previous == "" || first.GetEventTime().AsTime().Before(bounds[0]) {
				break
			}
			runs++
			runID = previous
		}
		mu.Lock()
		defer mu.Unlock()
		for w := range counts {
			counts[w].add(mine[w])
		}
		continued += runs
		return nil
	})
	return counts, continued, err
}

// flapTable reports each flap: when the Cluster watch saw False and True, who wrote True, when
// the workflows were idle, and the history events of the window up to the next flap.
func flapTable(r *Report, flaps []flap, counts []windowCounts, workflows int) {
	var rows [][]string
	for i, f := range flaps {
		by := "health probe (" + f.trueReason + ")"
		if f.restoredHere {
			by = "the benchmark"
		}
		settled := FormatDuration(f.settled)
		if f.settleErr != nil {
			settled += " (" + f.settleErr.Error() + ")"
		}
		var c windowCounts
		if i < len(counts) {
			c = counts[i]
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), FormatDuration(f.falseSeen), FormatDuration(f.trueSeen), by, settled,
			fmt.Sprint(c.events), fmt.Sprintf("%.1f", float64(c.events)/float64(max(workflows, 1))), fmt.Sprint(c.signals),
			fmt.Sprint(c.tasks), fmt.Sprint(c.activities)})
	}
	r.Printf("Times from the write of Ready=False; events of the %d histories from that write to the next flap's:\n\n", workflows)
	r.Table([]string{"flap", "False seen", "True seen", "True written by", "idle", "history events", "per MCS", "signals",
		"workflow tasks", "activities (incl. local)"}, rows)
}

// flapProcesses are the processes reported first in the flap's CPU table.
var flapProcesses = []string{"worker", "starter", "temporal", "temporal-server"}

// flapCPUTable reports the CPU of the processes over the baseline and the flaps, per flap
// gross and net of the baseline's rate (the stream's own cost and everything idle).
func flapCPUTable(r *Report, base, start, end map[string]time.Duration, baseWall, flapWall time.Duration, flaps int, machineBase, machineFlaps time.Duration) {
	names := slices.Clone(flapProcesses)
	var others []string
	for name := range end {
		if !slices.Contains(names, name) {
			others = append(others, name)
		}
	}
	slices.SortFunc(others, func(a, b string) int { return int((end[b] - start[b]) - (end[a] - start[a])) })
	names = append(names, others[:min(4, len(others))]...)
	row := func(name string, b, f time.Duration) []string {
		net := f - time.Duration(float64(b)*flapWall.Seconds()/baseWall.Seconds())
		return []string{name, fmt.Sprintf("%.2f", b.Seconds()/baseWall.Seconds()), fmt.Sprintf("%.2f", f.Seconds()/flapWall.Seconds()),
			FormatDuration(f / time.Duration(flaps)), FormatDuration(net / time.Duration(flaps))}
	}
	var rows [][]string
	var apiB, apiF, allB, allF time.Duration
	for name := range end {
		allB += start[name] - base[name]
		allF += end[name] - start[name]
		if strings.HasPrefix(name, "kube-apiserver/") {
			apiB += start[name] - base[name]
			apiF += end[name] - start[name]
		}
	}
	for _, name := range names {
		if _, ok := end[name]; ok {
			rows = append(rows, row(name, start[name]-base[name], end[name]-start[name]))
		}
	}
	rows = append(rows, row("all kube-apiservers", apiB, apiF), row("all processes of the environment and service", allB, allF),
		row("the whole machine (busy)", machineBase, machineFlaps))
	r.Printf("Cores = CPU time / wall time (baseline %s, flaps %s); per flap = CPU time over the flaps / %d; net = less the "+
		"baseline's rate over the flaps' time (the stream's cost and everything idle):\n\n", FormatDuration(baseWall), FormatDuration(flapWall), flaps)
	r.Table([]string{"process", "cores, baseline", "cores, flaps", "per flap", "per flap, net"}, rows)
}

// flapHeadlineCPU is the CPU worker, starter and Temporal used between two readings, and
// which of them it sums.
func flapHeadlineCPU(start, end map[string]time.Duration) (string, time.Duration) {
	var sum time.Duration
	var parts []string
	for _, name := range flapProcesses {
		if _, ok := end[name]; ok {
			sum += end[name] - start[name]
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, "+"), sum
}

// signalsSent is how many signals (signal and signal-with-start requests) the starter sent
// between two scrapes; -1 when one is missing.
func signalsSent(before, after map[string]Snapshot) float64 {
	if before["starter"] == nil || after["starter"] == nil {
		return -1
	}
	total := 0.0
	for _, d := range CounterDeltas(before["starter"], after["starter"], "temporal_request") {
		if strings.Contains(d.Name, "failure") {
			continue
		}
		if strings.Contains(labelMap(d.Labels)["operation"], "Signal") {
			total += d.Value
		}
	}
	return total
}

// tried keeps the updates up to the last one tried: the stream stops by cancellation, which
// leaves the rest unwritten and fails the write it interrupted.
func (u updates) tried() updates {
	n := 0
	for i, a := range u.addresses {
		if a != "" {
			n = i + 1
		}
	}
	u.addresses, u.writes = u.addresses[:n], u.writes[:n]
	u.errs = slices.DeleteFunc(u.errs, func(err error) bool { return errors.Is(err, context.Canceled) })
	return u
}
