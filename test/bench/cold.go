package bench

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// ColdOptions configure the cold-start convergence measurement.
type ColdOptions struct {
	Count    int           // MultiClusterServices (and Services and slices)
	Parallel int           // goroutines creating objects
	Timeout  time.Duration // from the first MultiClusterService create
	Sample   time.Duration // timeline resolution
}

const coldNamespace = "cold"

func coldName(i int) string { return fmt.Sprintf("svc-%03d", i) }

// coldTracker counts, as the watches see them, the dispatched slices per consumer and the
// MultiClusterServices per condition that is True.
type coldTracker struct {
	mu         sync.Mutex
	count      int
	provider   string
	slices     map[string]map[string]bool // consumer -> dispatched slice names with an endpoint
	conditions mcsConditions
	created    int
	done       firstTimes // "slices:<consumer>", "slices:all", "cond:<type>" -> when complete
}

var trackedConditions = []string{
	networkingv1alpha1.ConditionServiceApplied, networkingv1alpha1.ConditionEndpointSliceCollected,
	networkingv1alpha1.ConditionEndpointSliceDispatched, networkingv1alpha1.ConditionEndpointSliceApplied,
}

func (t *coldTracker) slice(consumer string, ev SliceEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	present := !ev.Deleted && len(ev.Slice.Endpoints) > 0
	if present {
		t.slices[consumer][ev.Slice.Name] = true
	} else {
		delete(t.slices[consumer], ev.Slice.Name)
	}
	if len(t.slices[consumer]) >= t.count {
		t.done.mark("slices:"+consumer, ev.At)
		all := true
		for _, s := range t.slices {
			all = all && len(s) >= t.count
		}
		if all {
			t.done.mark("slices:all", ev.At)
		}
	}
}

func (t *coldTracker) mcs(ev MCSEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conditions.record(ev)
	for _, typ := range trackedConditions {
		if t.conditions.countTrue(typ) >= t.count {
			t.done.mark("cond:"+typ, ev.At)
		}
	}
}

// mcsConditions holds, per MultiClusterService name, which condition types are True.
type mcsConditions map[string]map[string]bool

// record takes the conditions a watch saw on a MultiClusterService, or its deletion.
func (c mcsConditions) record(ev MCSEvent) {
	if ev.Deleted {
		delete(c, ev.Name)
		return
	}
	conds := map[string]bool{}
	for typ, status := range ev.Conditions {
		conds[typ] = status == "True"
	}
	c[ev.Name] = conds
}

// countTrue counts the MultiClusterServices with condition typ True.
func (c mcsConditions) countTrue(typ string) int {
	n := 0
	for _, conds := range c {
		if conds[typ] {
			n++
		}
	}
	return n
}

// firstTimes records when each key first completed.
type firstTimes map[string]time.Time

func (f firstTimes) mark(key string, at time.Time) {
	if _, ok := f[key]; !ok {
		f[key] = at
	}
}

// sample is the tracker's counts now: created, slices per consumer, then per tracked condition.
func (t *coldTracker) sample(consumers []string) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []int{t.created}
	for _, c := range consumers {
		out = append(out, len(t.slices[c]))
	}
	for _, typ := range trackedConditions {
		out = append(out, t.conditions.countTrue(typ))
	}
	return out
}

func (t *coldTracker) doneAt(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.done[key]
	return at, ok
}

// Cold creates Count Services (control plane and provider) and hand-written slices (provider)
// first, then Count MultiClusterServices as fast as possible, and measures how long the
// consumers take to hold every dispatched slice and the MultiClusterServices to report
// EndpointSliceApplied=True.
func (b *Bench) Cold(ctx context.Context, r *Report, opts ColdOptions) error {
	r.Heading(2, fmt.Sprintf("(b) %d MultiClusterServices from a cold start", opts.Count))
	if len(b.Env.Members) < 3 {
		return fmt.Errorf("the cold-start measurement needs 3 members, the environment has %d", len(b.Env.Members))
	}
	provider := b.Env.Members[0]
	consumers := []string{b.Env.Members[1].Name, b.Env.Members[2].Name}
	prefix, err := netip.ParsePrefix(provider.PodCIDR)
	if err != nil || prefix.Bits() > 16 || !prefix.Addr().Is4() {
		return fmt.Errorf("pod CIDR %q of %s is not an IPv4 /16 or wider", provider.PodCIDR, provider.Name)
	}
	r.Printf("Namespace %s: %d Services in the control plane and in %s and %d hand-written EndpointSlices (one endpoint each) in %s "+
		"exist before any MultiClusterService; then %d MultiClusterServices (providers [%s], consumers %v) are created by %d goroutines. "+
		"Time 0 is the first create. Counts come from watches; a dispatched slice counts when it has its endpoint.\n\n",
		coldNamespace, opts.Count, provider.Name, opts.Count, provider.Name, opts.Count, provider.Name, consumers, opts.Parallel)

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prepStart := time.Now()
	if err := b.ensureNamespace(ctx, coldNamespace); err != nil {
		return err
	}
	err = parallel(ctx, 3*opts.Count, opts.Parallel, func(ctx context.Context, j int) error {
		i := j / 3
		switch j % 3 {
		case 0:
			return b.createService(ctx, b.Env.ControlPlane.Name, coldNamespace, coldName(i))
		case 1:
			return b.createService(ctx, provider.Name, coldNamespace, coldName(i))
		default:
			return b.createSlice(ctx, provider.Name, coldNamespace, coldName(i)+"-bench", coldName(i), addressIn(prefix, i+1).String())
		}
	})
	if err != nil {
		return fmt.Errorf("preparing Services and slices: %w", err)
	}
	r.Printf("Preparation (%d Services, %d slices): %s.\n\n", 2*opts.Count, opts.Count, FormatDuration(time.Since(prepStart)))

	track := &coldTracker{count: opts.Count, provider: provider.Name, slices: map[string]map[string]bool{}, conditions: mcsConditions{}, done: firstTimes{}}
	for _, c := range consumers {
		track.slices[c] = map[string]bool{}
		if err := b.watchSlices(ctx, c, coldNamespace, dispatchedSelector(""), func(ev SliceEvent) {
			if ev.Slice.Annotations[networkingv1alpha1.AnnotationProvisionCluster] == provider.Name {
				track.slice(c, ev)
			}
		}); err != nil {
			return err
		}
	}
	if err := b.watchMCS(ctx, coldNamespace, track.mcs); err != nil {
		return err
	}

	before := b.scrapeAll(ctx)
	controlBefore := b.scrapeAPIServer(ctx, b.Env.ControlPlane.Name)
	cpuBefore := b.cpuTimes()
	machineBefore, _ := ReadMachineCPU()
	start := time.Now()
	var created time.Duration
	createErr := make(chan error, 1)
	createCtx, stopCreating := context.WithCancel(ctx)
	defer stopCreating()
	go func() {
		createErr <- parallel(createCtx, opts.Count, opts.Parallel, func(ctx context.Context, i int) error {
			err := b.createMCS(ctx, coldNamespace, coldName(i), []string{provider.Name}, consumers)
			if err == nil {
				track.mu.Lock()
				track.created++
				track.mu.Unlock()
			}
			return err
		})
		created = time.Since(start)
	}()

	timeline, creationErr := track.sampleUntilConverged(ctx, start, opts, consumers, createErr, stopCreating)
	cancel() // stops the watches
	measured := time.Since(start)
	final := track.sample(consumers)
	timeline = append(timeline, timelineRow(fmt.Sprintf("end: %.1f s", measured.Seconds()), final))
	machineAfter, _ := ReadMachineCPU()
	cpuAfter := b.cpuTimes()
	after := b.scrapeAll(context.WithoutCancel(parent))
	controlAfter := b.scrapeAPIServer(context.WithoutCancel(parent), b.Env.ControlPlane.Name)

	r.Printf("Creating %d MultiClusterServices took %s (%.0f/s).", final[0], FormatDuration(created), float64(final[0])/created.Seconds())
	if creationErr != nil {
		r.Printf(" **Creation errors**: %v", creationErr)
	}
	r.Printf(" Machine CPU busy %.0f%% from the first create to the end of the measurement.\n\n",
		100*Utilization(machineBefore, machineAfter))

	var rows [][]string
	outcome := func(what, key string, atEnd int) {
		end := fmt.Sprintf("%d/%d", atEnd, opts.Count)
		if at, ok := track.doneAt(key); ok {
			rows = append(rows, []string{what, FormatDuration(at.Sub(start)), end})
		} else {
			rows = append(rows, []string{what, fmt.Sprintf("not within %s", FormatDuration(measured)), end})
		}
	}
	for i, c := range consumers {
		outcome("all dispatched slices in "+c, "slices:"+c, final[1+i])
	}
	minSlices := slices.Min(final[1 : 1+len(consumers)])
	outcome("all dispatched slices in both consumers", "slices:all", minSlices)
	if at, ok := track.doneAt("slices:all"); ok {
		r.Headline(fmt.Sprintf("(b) %d MultiClusterServices: all slices dispatched after", opts.Count), FormatDuration(at.Sub(start)))
	} else {
		r.Headline(fmt.Sprintf("(b) %d MultiClusterServices: all slices dispatched after", opts.Count), "not within "+FormatDuration(measured))
	}
	for i, typ := range trackedConditions {
		outcome("all MCS "+typ+"=True", "cond:"+typ, final[1+len(consumers)+i])
	}
	r.Table([]string{"convergence (all of them at once)", "first reached after", "at the end of the measurement"}, rows)

	ids := make([]string, opts.Count)
	for i := range ids {
		ids[i] = mcs.WorkflowID(coldNamespace, coldName(i))
	}
	if tasks, err := b.WorkflowTasks(context.WithoutCancel(parent), ids); err != nil {
		r.Printf("Counting the workflow tasks failed: %v\n\n", err)
	} else {
		r.Printf("Workflow tasks of the %d MultiClusterService workflows, from their histories: %s.\n\n", opts.Count, tasks)
		r.Headline(fmt.Sprintf("(b) %d MultiClusterServices: workflow task heartbeats / tasks", opts.Count), fmt.Sprintf("%d / %d", tasks.Heartbeats, tasks.Completed))
	}

	r.Heading(3, "Timeline")
	headers := []string{"t", "MCS created"}
	for _, c := range consumers {
		headers = append(headers, "slices in "+c)
	}
	for _, typ := range trackedConditions {
		headers = append(headers, typ)
	}
	r.Table(headers, timeline)

	r.Heading(3, "Where the time goes")
	cpuSection(r, cpuBefore, cpuAfter, machineBefore, machineAfter, measured, opts.Count, "MultiClusterService")
	requestSection(r, b.Env.ControlPlane.Name, controlBefore, controlAfter)
	r.Printf("\nMetric deltas from the first create to the end:\n\n")
	b.metricsSection(r, before, after)

	if parent.Err() != nil {
		return parent.Err()
	}
	_, appliedDone := track.doneAt("cond:" + networkingv1alpha1.ConditionEndpointSliceApplied)
	_, slicesDone := track.doneAt("slices:all")
	if !appliedDone || !slicesDone {
		b.evidence(parent, r, track.laggards(consumers, 3), consumers)
	}
	return nil
}

// sampleUntilConverged samples the counts every opts.Sample until every MultiClusterService
// is created and converged, opts.Timeout has passed since start or ctx ends; it returns the
// timeline and the creation's error (stopping the creation if it is still going on).
func (t *coldTracker) sampleUntilConverged(ctx context.Context, start time.Time, opts ColdOptions, consumers []string,
	createErr <-chan error, stopCreating context.CancelFunc) ([][]string, error) {
	var timeline [][]string
	deadline := start.Add(opts.Timeout)
	nextSample := start.Add(opts.Sample)
	var creationErr error
	creating := true
	for {
		now := time.Now()
		if !now.Before(nextSample) {
			timeline = append(timeline, timelineRow(fmt.Sprintf("%.0f s", nextSample.Sub(start).Seconds()), t.sample(consumers)))
			nextSample = nextSample.Add(opts.Sample)
		}
		_, slicesDone := t.doneAt("slices:all")
		_, appliedDone := t.doneAt("cond:" + networkingv1alpha1.ConditionEndpointSliceApplied)
		if (slicesDone && appliedDone && !creating) || now.After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case creationErr = <-createErr:
			creating = false
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if creating {
		stopCreating()
		return timeline, <-createErr
	}
	return timeline, creationErr
}

func timelineRow(label string, counts []int) []string {
	row := []string{label}
	for _, n := range counts {
		row = append(row, fmt.Sprint(n))
	}
	return row
}

// laggards names up to n workflows of MultiClusterServices that are not done: a slice missing
// in a consumer or EndpointSliceApplied not True.
func (t *coldTracker) laggards(consumers []string, n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for i := 0; i < t.count && len(out) < n; i++ {
		name := coldName(i)
		missing := !t.conditions[name][networkingv1alpha1.ConditionEndpointSliceApplied]
		for _, c := range consumers {
			missing = missing || !t.slices[c][t.dispatchedName(name)]
		}
		if missing {
			out = append(out, mcs.WorkflowID(coldNamespace, name))
		}
	}
	return out
}

// dispatchedName is the name of a cold Service's dispatched slice in a consumer.
func (t *coldTracker) dispatchedName(service string) string {
	return naming.DispatchedSliceName(t.provider, service+"-bench")
}
