package bench

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// LatencyOptions configure the EndpointSlice propagation latency measurement.
type LatencyOptions struct {
	Updates  int           // address changes written (at least 200 for the report's p99)
	Interval time.Duration // between the starts of two writes
	// Settle is how long to wait for the last update to reach every consumer.
	Settle time.Duration
}

// stream names the objects of one stream of slice updates: a Service and a
// MultiClusterService named service in namespace, and the hand-written slice in the provider.
type stream struct{ namespace, service, slice string }

// The streams of the latency and the worker-crash measurements.
var (
	latencyStream  = stream{namespace: "bench", service: "lat", slice: "lat-bench"}
	crashStream    = stream{namespace: "bench", service: "crash", slice: "crash-bench"}
	temporalStream = stream{namespace: "bench", service: "tkill", slice: "tkill-bench"}
)

// sightings records when each watch (a cluster's slices, or a stage's Works in the control
// plane) first saw each endpoint address.
type sightings struct {
	mu    sync.Mutex
	first map[string]map[string]time.Time // watch -> address -> first seen
}

func (s *sightings) see(key string, addresses []string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first[key] == nil {
		s.first[key] = map[string]time.Time{}
	}
	for _, a := range addresses {
		if _, ok := s.first[key][a]; !ok {
			s.first[key][a] = at
		}
	}
}

// sliceAddresses are the endpoint addresses of a slice that was not deleted.
func sliceAddresses(ev SliceEvent) []string {
	if ev.Deleted {
		return nil
	}
	var out []string
	for _, ep := range ev.Slice.Endpoints {
		out = append(out, ep.Addresses...)
	}
	return out
}

func (s *sightings) at(cluster, address string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.first[cluster][address]
	return t, ok
}

// waitSeen waits until every cluster saw address.
func (s *sightings) waitSeen(ctx context.Context, clusters []string, address string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var missing []string
		for _, c := range clusters {
			if _, ok := s.at(c, address); !ok {
				missing = append(missing, c)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("address %s not seen within %s in %v", address, timeout, missing)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// addressIn returns the k-th address (k >= 1) of a /16 (or wider) prefix, skipping .0 and .255.
func addressIn(prefix netip.Prefix, k int) netip.Addr {
	b := prefix.Masked().Addr().As4()
	b[2], b[3] = byte(k/250), byte(k%250+1)
	return netip.AddrFrom4(b)
}

// watchLatencyStages records in seen when each stage shows each address: the provider's own
// slice, the collected Work (provider's execution namespace), the dispatched Works (each
// consumer's) and the dispatched slice in each consumer.
func (b *Bench) watchLatencyStages(ctx context.Context, st stream, provider string, consumers []string, seen *sightings) error {
	if err := b.watchSliceEnds(ctx, st, provider, consumers, seen); err != nil {
		return err
	}
	// The intermediate stages: the collected Work (provider's execution namespace) and the
	// dispatched Works (each consumer's), as a watch on the control plane sees them.
	works := labels.Set{networkingv1alpha1.LabelMCSName: st.service, networkingv1alpha1.LabelMCSNamespace: st.namespace}
	if err := b.watchControlPlane(ctx, kube.Works, "", works, func(w *unstructured.Unstructured, deleted bool, at time.Time) {
		cluster, ok := naming.ClusterOfExecutionNamespace(w.GetNamespace())
		if deleted || !ok {
			return
		}
		switch w.GetLabels()[naming.LabelWorkRole] {
		case naming.RoleCollected:
			seen.see(stageCollected, manifestAddresses(w), at)
		case naming.RoleDispatched:
			seen.see(stageDispatched+cluster, manifestAddresses(w), at)
		}
	}); err != nil {
		return err
	}

	return nil
}

// updates are the address changes written: address i was written at writes[i] (zero if the
// write failed).
type updates struct {
	addresses []string
	writes    []time.Time
	took      []time.Duration // of the successful writes
	errs      []error
}

// writeUpdates changes the slice's address opts.Updates times, starting a write every
// opts.Interval.
func (b *Bench) writeUpdates(ctx context.Context, st stream, provider string, prefix netip.Prefix, opts LatencyOptions) (updates, error) {
	u := updates{addresses: make([]string, opts.Updates), writes: make([]time.Time, opts.Updates)}
	start := time.Now()
	for i := range opts.Updates {
		if d := time.Until(start.Add(time.Duration(i) * opts.Interval)); d > 0 {
			select {
			case <-ctx.Done():
				return u, ctx.Err()
			case <-time.After(d):
			}
		}
		u.addresses[i] = addressIn(prefix, i+1).String()
		begin := time.Now()
		if err := b.setSliceAddress(ctx, provider, st.namespace, st.slice, u.addresses[i]); err != nil {
			u.errs = append(u.errs, err)
			continue
		}
		u.writes[i] = begin
		u.took = append(u.took, time.Since(begin))
	}
	return u, nil
}

// streamClusters are the provider (member1) and consumers (member2..member4) of a stream,
// and the provider's pod CIDR, from which the updates' addresses come.
func (b *Bench) streamClusters(updates int) (provider string, consumers []string, prefix netip.Prefix, err error) {
	if len(b.Env.Members) < 4 {
		return "", nil, prefix, fmt.Errorf("the measurement needs 4 members, the environment has %d", len(b.Env.Members))
	}
	p := b.Env.Members[0]
	for _, m := range b.Env.Members[1:4] {
		consumers = append(consumers, m.Name)
	}
	prefix, err = netip.ParsePrefix(p.PodCIDR)
	if err != nil || prefix.Bits() > 16 || !prefix.Addr().Is4() {
		return "", nil, prefix, fmt.Errorf("pod CIDR %q of %s is not an IPv4 /16 or wider", p.PodCIDR, p.Name)
	}
	if updates < 1 || updates >= 250*254 {
		return "", nil, prefix, fmt.Errorf("between 1 and %d updates", 250*254-1)
	}
	return p.Name, consumers, prefix, nil
}

// setupStream creates the stream's namespace, Services, slice and MultiClusterService, watches
// every stage, and waits until the slice's first address is in every consumer.
func (b *Bench) setupStream(ctx context.Context, r *Report, st stream, provider string, consumers []string, prefix netip.Prefix) (*sightings, error) {
	setupStart := time.Now()
	if err := b.ensureNamespace(ctx, st.namespace); err != nil {
		return nil, err
	}
	for _, c := range []string{b.Env.ControlPlane.Name, provider} {
		if err := b.createService(ctx, c, st.namespace, st.service); err != nil {
			return nil, err
		}
	}
	initial := addressIn(prefix, 250*254).String() // never one of the updates' addresses
	if err := b.createSlice(ctx, provider, st.namespace, st.slice, st.service, initial); err != nil {
		return nil, err
	}

	seen := &sightings{first: map[string]map[string]time.Time{}}
	if err := b.watchLatencyStages(ctx, st, provider, consumers, seen); err != nil {
		return nil, err
	}

	if err := b.createMCS(ctx, st.namespace, st.service, []string{provider}, consumers); err != nil {
		return nil, err
	}
	if err := seen.waitSeen(ctx, consumers, initial, 2*time.Minute); err != nil {
		r.Printf("**The first dispatch did not complete**: %v\n", err)
		b.evidence(ctx, r, []string{mcs.WorkflowID(st.namespace, st.service)}, consumers)
		return nil, err
	}
	r.Printf("Setup (namespace, Services, slice, MCS) until the first address was in all %d consumers: %s.\n\n",
		len(consumers), FormatDuration(time.Since(setupStart)))
	return seen, nil
}

// lastWritten is the address of the last successful write ("" when all failed).
func (u updates) lastWritten() string {
	for i := len(u.addresses) - 1; i >= 0; i-- {
		if !u.writes[i].IsZero() {
			return u.addresses[i]
		}
	}
	return ""
}

// Latency measures how long an EndpointSlice change in the provider (member1) takes to show
// in the dispatched slice of each consumer (member2..member4).
func (b *Bench) Latency(ctx context.Context, r *Report, opts LatencyOptions) error {
	r.Heading(2, "(a) EndpointSlice change → dispatched slice in every consumer")
	st := latencyStream
	provider, consumers, prefix, err := b.streamClusters(opts.Updates)
	if err != nil {
		return err
	}
	r.Printf("Provider %s, consumers %v; one Service %s/%s, one hand-written EndpointSlice %s in %s with one endpoint; "+
		"%d address changes started %s apart; latency = from just before the write to the moment a watch on the cluster "+
		"shows the slice with the new address. A later address seen first counts the earlier update as delivered then.\n\n",
		provider, consumers, st.namespace, st.service, st.slice, provider, opts.Updates, opts.Interval)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen, err := b.setupStream(ctx, r, st, provider, consumers, prefix)
	if err != nil {
		return err
	}

	before := b.scrapeAll(ctx)
	cpuBefore := b.cpuTimes()
	machineBefore, _ := ReadMachineCPU()
	start := time.Now()
	u, err := b.writeUpdates(ctx, st, provider, prefix, opts)
	if err != nil {
		return err
	}
	writing := time.Since(start)
	last := u.lastWritten()
	if last == "" {
		return fmt.Errorf("every write failed, first: %w", u.errs[0])
	}
	settleErr := seen.waitSeen(ctx, append([]string{provider}, consumers...), last, opts.Settle)
	settled := time.Now()
	machineAfter, _ := ReadMachineCPU()
	cpuAfter := b.cpuTimes()
	after := b.scrapeAll(ctx)

	r.Printf("%d writes in %s (%.1f/s); write call p50 %s, max %s; machine CPU busy %.0f%% from the first write until the last "+
		"address was everywhere.\n\n",
		len(u.took), FormatDuration(writing), float64(len(u.took))/writing.Seconds(),
		FormatDuration(Summarize(u.took).P50), FormatDuration(Summarize(u.took).Max),
		100*Utilization(machineBefore, machineAfter))
	if len(u.errs) > 0 {
		r.Printf("**%d writes failed**, first: %v\n\n", len(u.errs), u.errs[0])
	}
	if settleErr != nil {
		r.Printf("**Not everything settled**: %v\n\n", settleErr)
	}

	all := Summarize(delivered(latencyTables(r, seen, u, provider, consumers)))
	r.Headline("(a) latency to all consumers, p50", FormatDuration(all.P50))
	r.Headline("(a) latency to all consumers, p99", FormatDuration(all.P99))

	r.Heading(3, "Where the time goes")
	hopSection(r, before, after, len(u.took))
	r.Printf("\n")
	cpuSection(r, cpuBefore, cpuAfter, machineBefore, machineAfter, settled.Sub(start), len(u.took), "update")
	r.Printf("\nMetric deltas over the updates:\n\n")
	r.Printf("mcs_sync_eps_duration_seconds is observed only when a dispatch changed a Work, from the earliest detection among the " +
		"changes it folds in, so under coalescing it is measured from the oldest change, not each.\n\n")
	b.metricsSection(r, before, after)
	return nil
}

// latencyTables reports, per stage and cluster, when the updates were delivered, and the
// time each stage added. It returns each update's latency to the slowest consumer (-1: not
// delivered to all).
func latencyTables(r *Report, seen *sightings, u updates, provider string, consumers []string) (worst []time.Duration) {
	return latencyTablesOf(r, seen, u, provider, consumers, karmadaflowStages)
}

// stageNames describe the intermediate stages in latencyTablesOf's stage table.
type stageNames struct{ collected, dispatched, applied string }

// karmadaflowStages are the stages of karmadaflow's MultiClusterService.
var karmadaflowStages = stageNames{
	collected:  "→ collected Work updated (starter detects, signals the mcs workflow, CollectAndDispatch reads the provider and writes it)",
	dispatched: "→ dispatched Work updated (written by the same activity at the same time: near 0)",
	applied:    "→ slice in the consumer (applied while its Work is written: often before it)",
}

// latencyTablesOf is latencyTables with the stages described by stages.
func latencyTablesOf(r *Report, seen *sightings, u updates, provider string, consumers []string, stages stageNames) (worst []time.Duration) {
	n := len(u.addresses)
	var rows [][]string
	row := func(name string, lat []time.Duration, exact string) {
		d := delivered(lat)
		rows = append(rows, append([]string{name, fmt.Sprintf("%d/%d", len(d), n), exact}, Summarize(d).cells()...))
	}
	floor, floorExact := deliveries(seen, u, provider)
	row(provider+" slice (floor: its own watch)", floor, fmt.Sprint(floorExact))
	collected, collectedExact := deliveries(seen, u, stageCollected)
	row("collected Work in "+naming.ExecutionNamespace(provider)+" (control plane)", collected, fmt.Sprint(collectedExact))
	worst = make([]time.Duration, n)
	var consumerLat, workLat [][]time.Duration
	for _, c := range consumers {
		lat, exact := deliveries(seen, u, stageDispatched+c)
		row("dispatched Work in "+naming.ExecutionNamespace(c)+" (control plane)", lat, fmt.Sprint(exact))
		workLat = append(workLat, lat)
	}
	for _, c := range consumers {
		lat, exact := deliveries(seen, u, c)
		row("**"+c+" dispatched slice**", lat, fmt.Sprint(exact))
		consumerLat = append(consumerLat, lat)
		for i, d := range lat {
			if d < 0 || worst[i] < 0 {
				worst[i] = -1
			} else {
				worst[i] = max(worst[i], d)
			}
		}
	}
	row(fmt.Sprintf("**slowest of the %d consumers** (per update)", len(consumers)), worst, "-")
	r.Table([]string{"seen by a watch on", "delivered", "seen exactly (not coalesced)", "p50", "p90", "p99", "max", "mean"}, rows)

	// Stage increments per update and consumer, pooled over the consumers.
	var toCollected, toWork, toSlice []time.Duration
	for i := range n {
		if collected[i] >= 0 && floor[i] >= 0 {
			toCollected = append(toCollected, collected[i]-floor[i])
		}
		for k := range consumers {
			if workLat[k][i] >= 0 && collected[i] >= 0 {
				toWork = append(toWork, workLat[k][i]-collected[i])
			}
			if consumerLat[k][i] >= 0 && workLat[k][i] >= 0 {
				toSlice = append(toSlice, consumerLat[k][i]-workLat[k][i])
			}
		}
	}
	r.Printf("\nStages (per update, pooled over the consumers; each from the previous stage's watch sighting):\n\n")
	rows = nil
	for _, st := range []struct {
		name string
		ds   []time.Duration
	}{
		{"write → seen in " + provider + " (floor)", delivered(floor)},
		{stages.collected, toCollected},
		{stages.dispatched, toWork},
		{stages.applied, toSlice},
	} {
		rows = append(rows, append([]string{st.name, fmt.Sprint(len(st.ds))}, Summarize(st.ds).cells()...))
	}
	r.Table([]string{"stage", "n", "p50", "p90", "p99", "max", "mean"}, rows)
	return worst
}

// deliveries are the latencies of the updates as the watch key saw them: the delivery time
// of update i is the first sighting of address i or of any later address (coalesced
// updates), -1 when neither was seen. exact counts the addresses seen themselves.
func deliveries(seen *sightings, u updates, key string) (lat []time.Duration, exact int) {
	n := len(u.addresses)
	lat = make([]time.Duration, n)
	var best time.Time
	for i := n - 1; i >= 0; i-- {
		if t, ok := seen.at(key, u.addresses[i]); ok {
			exact++
			if best.IsZero() || t.Before(best) {
				best = t
			}
		}
		lat[i] = -1
		if !best.IsZero() && !u.writes[i].IsZero() {
			lat[i] = best.Sub(u.writes[i])
		}
	}
	return lat, exact
}

// Watch keys of the intermediate stages.
const (
	stageCollected  = "work:collected"
	stageDispatched = "work:dispatched:"
)

func delivered(lat []time.Duration) []time.Duration {
	return slices.DeleteFunc(slices.Clone(lat), func(d time.Duration) bool { return d < 0 })
}

// watchSliceEnds records in seen when the provider's own slice and the slice dispatched to each
// consumer show each address: the two ends of every latency measured.
func (b *Bench) watchSliceEnds(ctx context.Context, st stream, provider string, consumers []string, seen *sightings) error {
	own := labels.Set{networkingv1alpha1.LabelServiceName: st.service, networkingv1alpha1.LabelEndpointSliceManagedBy: ManagedBy}
	if err := b.watchSlices(ctx, provider, st.namespace, own, func(ev SliceEvent) {
		seen.see(provider, sliceAddresses(ev), ev.At)
	}); err != nil {
		return err
	}
	for _, c := range consumers {
		if err := b.watchSlices(ctx, c, st.namespace, dispatchedSelector(st.service), func(ev SliceEvent) {
			if ev.Slice.Annotations[networkingv1alpha1.AnnotationProvisionCluster] == provider {
				seen.see(c, sliceAddresses(ev), ev.At)
			}
		}); err != nil {
			return err
		}
	}
	return nil
}
