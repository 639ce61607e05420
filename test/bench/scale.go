package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// ScaleOptions configure the scale measurement (cmd/scalebench, make bench-scale).
type ScaleOptions struct {
	Count     int    // MultiClusterServices
	Providers int    // provider clusters of each
	Consumers int    // consumer clusters of each (none of them a provider)
	Seed      uint64 // of the generator that chooses them
	Parallel  int    // goroutines creating objects
	// ColdTimeout bounds the cold start, from the first MultiClusterService created; Sample is
	// its timeline's resolution.
	ColdTimeout, Sample time.Duration
	// Rate slice changes a second for Steady; Settle bounds the wait for the last of them.
	Rate           int
	Steady, Settle time.Duration
	// Around is how long the stream runs around the worker restart. DisruptionRate is the
	// stream's rate around the restart and during the flaps: one the machine sustains, so that
	// their stall and catch-up measure the disruption, not a backlog the stream builds.
	Around         time.Duration
	DisruptionRate int
	// Flaps of one member's Ready condition; FlapSettle bounds the wait for one flap's work.
	Flaps      int
	FlapSettle time.Duration
}

const scaleNamespace = "scale"

func scaleName(i int) string { return fmt.Sprintf("s-%04d", i) }

// scaleService is one MultiClusterService of the scale measurement and the clusters the
// generator chose for it.
type scaleService struct {
	name                 string
	providers, consumers []string
}

// slice is the name of the hand-written slice of the service in each provider.
func (s scaleService) slice() string { return s.name + "-bench" }

// dispatched is the name of a provider's slice in a consumer.
func (s scaleService) dispatched(provider string) string {
	return naming.DispatchedSliceName(provider, s.slice())
}

// involves reports whether the service has cluster among its providers or consumers.
func (s scaleService) involves(cluster string) bool {
	return slices.Contains(s.providers, cluster) || slices.Contains(s.consumers, cluster)
}

// scalePlan chooses, with a generator seeded by opts.Seed, the providers and consumers of
// each MultiClusterService among members: distinct clusters, uniformly.
func scalePlan(members []string, opts ScaleOptions) []scaleService {
	rng := rand.New(rand.NewPCG(opts.Seed, 0))
	plan := make([]scaleService, opts.Count)
	for i := range plan {
		perm := rng.Perm(len(members))
		s := scaleService{name: scaleName(i)}
		for j, k := range perm[:opts.Providers+opts.Consumers] {
			if j < opts.Providers {
				s.providers = append(s.providers, members[k])
			} else {
				s.consumers = append(s.consumers, members[k])
			}
		}
		plan[i] = s
	}
	return plan
}

// scaleTracker follows, from watches of every member, which dispatched slices have their
// endpoint and when each address first showed in each cluster, and from a watch of the
// control plane which conditions each MultiClusterService has True.
type scaleTracker struct {
	mu         sync.Mutex
	want       map[string]bool // "<consumer>/<slice>": expected dispatched slices
	have       map[string]bool // of them, those present with an endpoint
	conditions mcsConditions
	count      int // MultiClusterServices
	created    int
	done       firstTimes // "slices", "conditions" -> when complete
	seen       *sightings
}

func newScaleTracker(plan []scaleService) *scaleTracker {
	t := &scaleTracker{want: map[string]bool{}, have: map[string]bool{}, conditions: mcsConditions{},
		count: len(plan), done: firstTimes{}, seen: &sightings{first: map[string]map[string]time.Time{}}}
	for _, s := range plan {
		for _, c := range s.consumers {
			for _, p := range s.providers {
				t.want[c+"/"+s.dispatched(p)] = true
			}
		}
	}
	return t
}

func (t *scaleTracker) slice(cluster string, ev SliceEvent) {
	t.seen.see(cluster, sliceAddresses(ev), ev.At)
	key := cluster + "/" + ev.Slice.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.want[key] {
		return
	}
	if !ev.Deleted && len(ev.Slice.Endpoints) > 0 {
		t.have[key] = true
	} else {
		delete(t.have, key)
	}
	if len(t.have) == len(t.want) {
		t.done.mark("slices", ev.At)
	}
}

func (t *scaleTracker) mcs(ev MCSEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conditions.record(ev)
	all := true
	for _, typ := range trackedConditions {
		all = all && t.conditions.countTrue(typ) >= t.count
	}
	if all {
		t.done.mark("conditions", ev.At)
	}
}

func (t *scaleTracker) doneAt(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.done[key]
	return at, ok
}

// sample is now's counts: created, dispatched slices present, then per tracked condition.
func (t *scaleTracker) sample() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []int{t.created, len(t.have)}
	for _, typ := range trackedConditions {
		out = append(out, t.conditions.countTrue(typ))
	}
	return out
}

// missing names up to n MultiClusterServices that are not converged yet.
func (t *scaleTracker) missing(plan []scaleService, n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, s := range plan {
		if len(out) >= n {
			break
		}
		done := t.conditions[s.name][networkingv1alpha1.ConditionEndpointSliceApplied]
		for _, c := range s.consumers {
			for _, p := range s.providers {
				done = done && t.have[c+"/"+s.dispatched(p)]
			}
		}
		if !done {
			out = append(out, s.name)
		}
	}
	return out
}

// scaleWrite is one slice change of the scale stream.
type scaleWrite struct {
	service  int // index in the plan
	provider string
	address  string
	at       time.Time // when the write returned; zero if it failed
}

// scaleStream writes slice changes to randomly chosen MultiClusterServices' providers.
type scaleStream struct {
	b        *Bench
	plan     []scaleService
	prefixes map[string]netip.Prefix
	rng      *rand.Rand
	next     int // the next address's index in its provider's prefix
	mu       sync.Mutex
	writes   []scaleWrite
	errs     []error
}

// run writes rate changes a second for d (or until ctx ends), each to a service that pick
// accepts (nil: any), and returns once every write has returned.
func (s *scaleStream) run(ctx context.Context, rate int, d time.Duration, pick func(scaleService) bool) {
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
		j := s.rng.IntN(len(s.plan))
		for pick != nil && !pick(s.plan[j]) {
			j = s.rng.IntN(len(s.plan))
		}
		svc := s.plan[j]
		provider := svc.providers[s.rng.IntN(len(svc.providers))]
		s.next++
		address := addressIn(s.prefixes[provider], s.next).String()
		s.mu.Lock()
		i := len(s.writes)
		s.writes = append(s.writes, scaleWrite{service: j, provider: provider, address: address})
		s.mu.Unlock()
		wg.Go(func() {
			err := s.b.setSliceAddress(ctx, provider, scaleNamespace, svc.slice(), address)
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				s.errs = append(s.errs, err)
				return
			}
			s.writes[i].at = time.Now()
		})
	}
	wg.Wait()
}

// scaleLatency is what became of the writes of a window.
type scaleLatency struct {
	all        []time.Duration // per delivered change, to the slowest of its consumers
	superseded int             // overwritten before every consumer showed it
	lost       int             // neither delivered nor superseded
}

// latencies sorts the writes in [from, to) by outcome. A change counts as delivered once every
// consumer of its service showed its address; as superseded when a later change of the same
// slice was delivered instead.
func (s *scaleStream) latencies(seen *sightings, from, to time.Time) scaleLatency {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out scaleLatency
	for i, w := range s.writes {
		if w.at.IsZero() || w.at.Before(from) || !w.at.Before(to) {
			continue
		}
		if took, ok := s.deliveredLocked(seen, w); ok {
			out.all = append(out.all, took)
			continue
		}
		superseded := false
		for _, later := range s.writes[i+1:] {
			if later.service == w.service && later.provider == w.provider && !later.at.IsZero() {
				if _, ok := s.deliveredLocked(seen, later); ok {
					superseded = true
					break
				}
			}
		}
		if superseded {
			out.superseded++
		} else {
			out.lost++
		}
	}
	return out
}

func (s *scaleStream) deliveredLocked(seen *sightings, w scaleWrite) (time.Duration, bool) {
	var slowest time.Duration
	for _, c := range s.plan[w.service].consumers {
		at, ok := seen.at(c, w.address)
		if !ok {
			return 0, false
		}
		slowest = max(slowest, at.Sub(w.at))
	}
	return slowest, true
}

// waitDelivered waits until every write of [from, to) is delivered or superseded, or timeout.
func (s *scaleStream) waitDelivered(ctx context.Context, seen *sightings, from, to time.Time, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l := s.latencies(seen, from, to)
		if l.lost == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d changes not delivered within %s", l.lost, FormatDuration(timeout))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// scaleReading is what the processes had used and served at one moment.
type scaleReading struct {
	at      time.Time
	cpu     map[string]time.Duration
	machine MachineCPU
	control Snapshot
	worker  Snapshot
	members map[string]Snapshot // by member, when asked for
}

func (b *Bench) scaleRead(ctx context.Context, withMembers bool) scaleReading {
	m, _ := ReadMachineCPU()
	r := scaleReading{at: time.Now(), cpu: b.cpuTimes(), machine: m, control: b.scrapeAPIServer(ctx, b.Env.ControlPlane.Name)}
	r.worker, _ = Scrape(ctx, b.Service.MetricsAddress("worker"))
	if withMembers {
		r.members = map[string]Snapshot{}
		for _, member := range b.Env.Members {
			r.members[member.Name] = b.scrapeAPIServer(ctx, member.Name)
		}
	}
	return r
}

// requestTotal is how many requests an API server served between two scrapes (0 when one is
// missing).
func requestTotal(before, after Snapshot) float64 {
	if before == nil || after == nil {
		return 0
	}
	total := 0.0
	for _, d := range CounterDeltas(before, after, "apiserver_request_total") {
		total += d.Value
	}
	return total
}

// Scale measures karmadaflow with opts.Count MultiClusterServices over every member of the
// environment: the cold start until every slice is dispatched and every condition True; then
// opts.Rate slice changes a second for opts.Steady, with their latency, the CPU each process
// used, Temporal's history events and bytes and the control plane's requests per change; then
// the stall and catch-up of a stream of opts.DisruptionRate changes a second around a worker
// restart and around flaps of a member.
func (b *Bench) Scale(ctx context.Context, r *Report, opts ScaleOptions) error {
	var members []string
	for _, m := range b.Env.Members {
		members = append(members, m.Name)
	}
	if len(members) < opts.Providers+opts.Consumers {
		return fmt.Errorf("%d providers and %d consumers need as many members, the environment has %d", opts.Providers, opts.Consumers, len(members))
	}
	prefixes := map[string]netip.Prefix{}
	for _, m := range b.Env.Members {
		p, err := netip.ParsePrefix(m.PodCIDR)
		if err != nil || p.Bits() > 16 || !p.Addr().Is4() {
			return fmt.Errorf("pod CIDR %q of %s is not an IPv4 /16 or wider", m.PodCIDR, m.Name)
		}
		prefixes[m.Name] = p
	}
	plan := scalePlan(members, opts)
	ids := make([]string, len(plan))
	for i, s := range plan {
		ids[i] = mcs.WorkflowID(scaleNamespace, s.name)
	}
	track := newScaleTracker(plan)

	r.Heading(2, fmt.Sprintf("%d MultiClusterServices over %d members", opts.Count, len(members)))
	r.Printf("Each MultiClusterService has %d providers and %d consumers, distinct members chosen uniformly by a generator "+
		"seeded with %d; each provider holds one hand-written EndpointSlice of one endpoint, so %d dispatched slices are "+
		"expected in the consumers. Counts come from watches of every member and of the control plane.\n\n",
		opts.Providers, opts.Consumers, opts.Seed, len(track.want))

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := b.scalePrepare(ctx, r, plan, prefixes, opts.Parallel); err != nil {
		return err
	}
	for _, m := range members {
		if err := b.watchSlices(ctx, m, scaleNamespace, dispatchedSelector(""), func(ev SliceEvent) { track.slice(m, ev) }); err != nil {
			return err
		}
	}
	if err := b.watchMCS(ctx, scaleNamespace, track.mcs); err != nil {
		return err
	}

	// The steps after a cold start that did not converge still run: their changes are to
	// slices of converged MultiClusterServices or not, and the report says which were lost.
	coldErr := b.scaleCold(ctx, r, plan, track, opts)
	stream := &scaleStream{b: b, plan: plan, prefixes: prefixes, rng: rand.New(rand.NewPCG(opts.Seed, 1)), next: opts.Count}
	steadyErr := b.scaleSteady(ctx, r, stream, track, ids, opts)
	restartErr := b.scaleRestart(ctx, r, stream, track, opts)
	flapErr := b.scaleFlaps(ctx, r, stream, track, plan, ids, opts)
	if parent.Err() != nil {
		return parent.Err()
	}
	return errors.Join(coldErr, steadyErr, restartErr, flapErr)
}

// scalePrepare creates the namespace, each MultiClusterService's Service in the control plane
// and in its providers, and the providers' hand-written slices.
func (b *Bench) scalePrepare(ctx context.Context, r *Report, plan []scaleService, prefixes map[string]netip.Prefix, workers int) error {
	begin := time.Now()
	if err := b.ensureNamespace(ctx, scaleNamespace); err != nil {
		return err
	}
	type create struct {
		cluster string
		service int
		slice   bool
	}
	var creates []create
	for i, s := range plan {
		creates = append(creates, create{cluster: b.Env.ControlPlane.Name, service: i})
		for _, p := range s.providers {
			creates = append(creates, create{cluster: p, service: i}, create{cluster: p, service: i, slice: true})
		}
	}
	err := parallel(ctx, len(creates), workers, func(ctx context.Context, j int) error {
		c := creates[j]
		s := plan[c.service]
		if c.slice {
			return b.createSlice(ctx, c.cluster, scaleNamespace, s.slice(), s.name, addressIn(prefixes[c.cluster], c.service+1).String())
		}
		return b.createService(ctx, c.cluster, scaleNamespace, s.name)
	})
	if err != nil {
		return fmt.Errorf("preparing Services and slices: %w", err)
	}
	r.Printf("Preparation: %d Services and slices in the control plane and the providers, created in %s.\n\n",
		len(creates), FormatDuration(time.Since(begin)))
	return nil
}

// scaleCold creates the MultiClusterServices and waits until every slice is dispatched and
// every condition True.
func (b *Bench) scaleCold(ctx context.Context, r *Report, plan []scaleService, track *scaleTracker, opts ScaleOptions) error {
	r.Heading(3, "Cold start")
	before := b.scaleRead(ctx, false)
	start := before.at
	createErr := make(chan error, 1)
	go func() {
		createErr <- parallel(ctx, len(plan), opts.Parallel, func(ctx context.Context, i int) error {
			err := b.createMCS(ctx, scaleNamespace, plan[i].name, plan[i].providers, plan[i].consumers)
			if err == nil {
				track.mu.Lock()
				track.created++
				track.mu.Unlock()
			}
			return err
		})
	}()
	var timeline [][]string
	var creationErr error
	creating := true
	next := start.Add(opts.Sample)
	for {
		now := time.Now()
		if !now.Before(next) {
			timeline = append(timeline, timelineRow(fmt.Sprintf("%.0f s", next.Sub(start).Seconds()), track.sample()))
			next = next.Add(opts.Sample)
		}
		_, slicesDone := track.doneAt("slices")
		_, condsDone := track.doneAt("conditions")
		if (slicesDone && condsDone && !creating) || now.Sub(start) > opts.ColdTimeout || ctx.Err() != nil {
			break
		}
		select {
		case creationErr = <-createErr:
			creating = false
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	after := b.scaleRead(ctx, false)
	measured := after.at.Sub(start)
	timeline = append(timeline, timelineRow(fmt.Sprintf("end: %.1f s", measured.Seconds()), track.sample()))
	if creationErr != nil {
		r.Printf("**Creation errors**: %v\n\n", creationErr)
	}
	outcome := func(what, key string) string {
		if at, ok := track.doneAt(key); ok {
			d := FormatDuration(at.Sub(start))
			r.Headline("scale: cold start, "+what, d)
			return d
		}
		r.Headline("scale: cold start, "+what, "not within "+FormatDuration(measured))
		return "not within " + FormatDuration(measured)
	}
	r.Printf("From the first create: every slice dispatched after **%s**, every condition True after **%s** "+
		"(machine %.0f%% busy).\n\n", outcome("every slice dispatched", "slices"), outcome("every condition True", "conditions"),
		100*Utilization(before.machine, after.machine))
	headers := []string{"t", "MCS created", "dispatched slices"}
	for _, typ := range trackedConditions {
		headers = append(headers, typ)
	}
	r.Table(headers, timeline)
	cpuSection(r, before.cpu, after.cpu, before.machine, after.machine, measured, len(plan), "MultiClusterService")
	if _, ok := track.doneAt("conditions"); !ok {
		return fmt.Errorf("not converged within %s; for example %v", FormatDuration(opts.ColdTimeout), track.missing(plan, 5))
	}
	if _, ok := track.doneAt("slices"); !ok {
		return fmt.Errorf("not every slice dispatched within %s; for example %v", FormatDuration(opts.ColdTimeout), track.missing(plan, 5))
	}
	return nil
}

// scaleSteady runs the stream at opts.Rate for opts.Steady and reports its latency and its
// cost per change.
func (b *Bench) scaleSteady(ctx context.Context, r *Report, stream *scaleStream, track *scaleTracker, ids []string, opts ScaleOptions) error {
	r.Heading(3, fmt.Sprintf("%d slice changes a second for %s", opts.Rate, FormatDuration(opts.Steady)))
	before := b.scaleRead(ctx, true)
	stream.run(ctx, opts.Rate, opts.Steady, nil)
	end := time.Now()
	settleErr := stream.waitDelivered(ctx, track.seen, before.at, end, opts.Settle)
	after := b.scaleRead(ctx, true)
	l := stream.latencies(track.seen, before.at, end)
	changes := len(l.all) + l.superseded + l.lost
	r.Printf("%d changes, each to a provider slice of a MultiClusterService chosen at random: %d delivered to every consumer, "+
		"%d superseded by a later change of the same slice, **%d lost**. Latency to the slowest consumer:\n\n",
		changes, len(l.all), l.superseded, l.lost)
	s := Summarize(l.all)
	summaryTable(r, s)
	r.Headline("scale: steady all-consumer p50", FormatDuration(s.P50))
	r.Headline("scale: steady all-consumer p99", FormatDuration(s.P99))
	if settleErr != nil {
		r.Printf("**Not settled**: %v\n\n", settleErr)
	}
	n := max(changes, 1)

	r.Printf("\nCPU per change (the window includes the safety resyncs and health probes that ran meanwhile):\n\n")
	wall := after.at.Sub(before.at)
	cpuSection(r, before.cpu, after.cpu, before.machine, after.machine, wall, n, "change")
	total := requestSection(r, b.Env.ControlPlane.Name, before.control, after.control)
	r.Printf("\nControl-plane API requests per change: **%.1f**.\n\n", total/float64(n))
	r.Headline("scale: control-plane API requests per change", fmt.Sprintf("%.1f", total/float64(n)))
	if before.worker != nil && after.worker != nil {
		r.Printf("The worker's lists of a MultiClusterService's Works (by why its Work cache did not answer), and its "+
			"workflow cache, over the window:\n\n%s\n", counterTable(CounterDeltas(before.worker, after.worker,
			"mcs_work_lists_total", "temporal_sticky_cache", "temporal_workflow_task_execution_failed")))
	}
	var memberTotal, busiest float64
	busiestName := ""
	for name, a := range after.members {
		t := requestTotal(before.members[name], a)
		memberTotal += t
		if t > busiest {
			busiest, busiestName = t, name
		}
	}
	r.Printf("Member API requests over the window: %.0f in all, %.1f per change; the busiest member, %s, served %.0f "+
		"(%.1f a second).\n\n", memberTotal, memberTotal/float64(n), busiestName, busiest, busiest/wall.Seconds())
	r.Headline("scale: member API requests per change (all members)", fmt.Sprintf("%.1f", memberTotal/float64(n)))

	counts, runs, err := b.windowEvents(context.WithoutCancel(ctx), ids, []time.Time{before.at, after.at})
	if err != nil {
		r.Printf("**Reading the histories failed**: %v\n\n", err)
	} else {
		c := counts[0]
		r.Printf("Temporal histories of the %d MultiClusterService workflows over the window: %d events (%s), %d of them signals, "+
			"%d workflow tasks, %d activities; %d runs continued as new. Per change: **%.1f events, %s**.\n\n",
			len(ids), c.events, FormatBytes(int64(c.bytes)), c.signals, c.tasks, c.activities, runs,
			float64(c.events)/float64(n), FormatBytes(int64(c.bytes/n)))
		r.Headline("scale: history events per change", fmt.Sprintf("%.1f", float64(c.events)/float64(n)))
		r.Headline("scale: history bytes per change", FormatBytes(int64(c.bytes/n)))
	}
	var rows [][]string
	for _, component := range components {
		if pid := b.Service.PID(component); pid != 0 {
			if m, err := ReadMemory(pid); err == nil {
				rows = append(rows, []string{component, FormatBytes(m.PeakRSS), FormatBytes(m.RSS)})
				r.Headline("scale: "+component+" peak RSS", FormatBytes(m.PeakRSS))
			}
		}
	}
	r.Printf("Memory of the service since it started (cold start included):\n\n")
	r.Table([]string{"process", "peak RSS", "RSS now"}, rows)
	if l.lost > 0 {
		return fmt.Errorf("steady: %d changes lost", l.lost)
	}
	return nil
}

// disturbance reports the stream's writes of [from, to) around a disturbance that began at
// start and ended at back (the service ready again): the longest a change took, and how long
// after start the stream had caught up, that is when the last change written before back had
// reached every consumer.
func disturbance(stream *scaleStream, seen *sightings, from, start, back, to time.Time) (stall time.Duration, caughtUp time.Duration, l scaleLatency) {
	l = stream.latencies(seen, from, to)
	if len(l.all) > 0 {
		stall = slices.Max(l.all)
	}
	stream.mu.Lock()
	defer stream.mu.Unlock()
	for _, w := range stream.writes {
		if w.at.IsZero() || w.at.Before(from) || !w.at.Before(back) {
			continue
		}
		if took, ok := stream.deliveredLocked(seen, w); ok {
			caughtUp = max(caughtUp, w.at.Add(took).Sub(start))
		}
	}
	return stall, caughtUp, l
}

// scaleRestart restarts the worker (SIGTERM, then a new process) while the stream runs.
func (b *Bench) scaleRestart(ctx context.Context, r *Report, stream *scaleStream, track *scaleTracker, opts ScaleOptions) error {
	r.Heading(3, "A worker restart")
	from := time.Now()
	done := make(chan struct{})
	go func() { stream.run(ctx, opts.DisruptionRate, opts.Around, nil); close(done) }()
	time.Sleep(opts.Around / 3)
	start := time.Now()
	b.Service.StopInstance("worker")
	stopped := time.Since(start)
	err := b.Service.StartComponent(ctx, "worker")
	back := time.Now()
	ready := back.Sub(start)
	<-done
	to := time.Now()
	settleErr := stream.waitDelivered(ctx, track.seen, from, to, opts.Settle)
	stall, caughtUp, l := disturbance(stream, track.seen, from, start, back, to)
	r.Printf("The stream ran at %d changes a second for %s; a third in, the worker was stopped (SIGTERM: %s) and started "+
		"again (ready %s after the stop began). %d changes delivered, %d superseded, **%d lost**. The slowest change took "+
		"**%s**; the last change written before the worker was ready again arrived %s after the stop began. All changes of the window:\n\n",
		opts.DisruptionRate, FormatDuration(opts.Around), FormatDuration(stopped), FormatDuration(ready), len(l.all), l.superseded, l.lost,
		FormatDuration(stall), FormatDuration(caughtUp))
	s := Summarize(l.all)
	summaryTable(r, s)
	r.Headline("scale: worker restart, longest change", FormatDuration(stall))
	r.Headline("scale: worker restart, caught up after", FormatDuration(caughtUp))
	return errors.Join(err, settleErr)
}

// scaleFlaps flaps the member that most MultiClusterServices involve opts.Flaps times while the
// stream runs on the MultiClusterServices that do not involve it.
func (b *Bench) scaleFlaps(ctx context.Context, r *Report, stream *scaleStream, track *scaleTracker, plan []scaleService, ids []string, opts ScaleOptions) error {
	r.Heading(3, fmt.Sprintf("A member flaps %d times", opts.Flaps))
	if opts.Flaps <= 0 {
		r.Printf("Skipped.\n")
		return nil
	}
	involved := map[string]int{}
	for _, s := range plan {
		for _, c := range append(slices.Clone(s.providers), s.consumers...) {
			involved[c]++
		}
	}
	member := ""
	for m, n := range involved {
		if member == "" || n > involved[member] || (n == involved[member] && m < member) {
			member = m
		}
	}
	var flapped []string
	for i, s := range plan {
		if s.involves(member) {
			flapped = append(flapped, ids[i])
		}
	}
	sample := evenSample(flapped, flapSample)
	unrelated := func(s scaleService) bool { return !s.involves(member) }
	from := time.Now()
	streamCtx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	done := make(chan struct{})
	go func() { stream.run(streamCtx, opts.DisruptionRate, time.Hour, unrelated); close(done) }()
	var rows [][]string
	var flapErr error
	first := time.Now()
	for i := range opts.Flaps {
		f, err := b.flapOnce(ctx, member, sample, opts.FlapSettle)
		b.Logf("bench: scale flap %d of %d: True again after %s, idle after %s", i+1, opts.Flaps, FormatDuration(f.trueSeen), FormatDuration(f.settled))
		idle := FormatDuration(f.settled)
		if f.settleErr != nil {
			idle = "not within " + FormatDuration(opts.FlapSettle)
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), FormatDuration(f.falseSeen), FormatDuration(f.trueSeen), idle})
		if err != nil {
			flapErr = err
			break
		}
	}
	stopStream()
	<-done
	to := time.Now()
	settleErr := stream.waitDelivered(ctx, track.seen, from, to, opts.Settle)
	stall, _, l := disturbance(stream, track.seen, from, first, to, to)
	r.Printf("%s is involved in %d of the %d MultiClusterServices. Each flap writes its Ready condition False, waits until "+
		"the health workflow has written True again, then until %d of the involved workflows are idle (as in mcsbench (f)). "+
		"Meanwhile the stream changes, %d times a second, slices of MultiClusterServices that do not involve %s.\n\n",
		member, len(flapped), len(plan), len(sample), opts.DisruptionRate, member)
	r.Table([]string{"flap", "False seen", "True again", "involved workflows idle (catch-up)"}, rows)
	s := Summarize(l.all)
	r.Printf("\nThe unrelated stream: %d changes delivered, %d superseded, **%d lost**:\n\n", len(l.all), l.superseded, l.lost)
	summaryTable(r, s)
	r.Headline("scale: member flaps, unrelated change p99", FormatDuration(s.P99))
	r.Headline("scale: member flaps, longest unrelated change", FormatDuration(stall))
	if len(stream.errs) > 0 {
		r.Printf("\n**%d writes failed**, first: %v\n", len(stream.errs), stream.errs[0])
	}
	return errors.Join(flapErr, settleErr)
}

// summaryTable reports a latency distribution as one row: how many, p50, p90, p99, max, mean.
func summaryTable(r *Report, s Summary) {
	r.Table([]string{"changes", "p50", "p90", "p99", "max", "mean"}, [][]string{append([]string{fmt.Sprint(s.N)}, s.cells()...)})
}
