package bench

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Beside Karmada (env.Options.BesideKarmada) the same EndpointSlice propagation latency is
// measured whichever MultiClusterService implementation runs, karmadaflow's workflows or
// Karmada's own controllers: both write the collected slices into Works in the provider's
// execution namespace, the dispatched ones into Works in each consumer's, labelled with the
// MultiClusterService's name and namespace, and Karmada's execution controller applies the
// dispatched Works as slices labelled and annotated alike (named <provider>.<slice> by
// karmadaflow, <provider>-<slice> by Karmada).

// BesideService is the Service and MultiClusterService of a stream beside Karmada.
const BesideService = "lat"

// besideStages describe the stages whichever implementation runs.
var besideStages = stageNames{
	collected:  "→ collected Work updated (the provider's slice collected into its execution namespace)",
	dispatched: "→ dispatched Work updated (the collected slice written into each consumer's execution namespace)",
	applied:    "→ slice in the consumer (Karmada's execution controller applies the dispatched Work)",
}

// BesideResult are the figures of one stream beside Karmada.
type BesideResult struct {
	Namespace string
	Provider  string
	Consumers []string
	// Setup is from creating the namespace in the control plane until the slice's first
	// address was in every consumer.
	Setup          time.Duration
	Writes, Failed int
	Floor          Summary   // the provider's own watch of its slice
	Consumer       []Summary // per consumer, in Consumers' order
	All            Summary   // per update, the slowest consumer
	Busy           float64   // machine CPU busy fraction from the first write until settled
	// CPU is the CPU time each process of the environment, the service and this program
	// used from the first write until settled, MachineBusy the whole machine's, and Wall that
	// time.
	CPU         map[string]time.Duration
	MachineBusy time.Duration
	Wall        time.Duration
	SettleErr   error
	// ControlPlaneSlices are the EndpointSlices in the namespace of the control plane once
	// settled: none is expected; Karmada's ServiceExport endpointSlice controller writes
	// imported-<cluster>-<slice> ones for collected Works it takes for its own (labelled
	// endpointslice.karmada.io/name, as karmadaflow's were once).
	ControlPlaneSlices []string
}

// besideClusters are the provider (member1) and the consumers (member2, member3) of a
// stream beside Karmada, and the provider's pod CIDR the addresses come from.
func (b *Bench) besideClusters(updates int) (provider string, consumers []string, prefix netip.Prefix, err error) {
	if len(b.Env.Members) < 3 {
		return "", nil, prefix, fmt.Errorf("the measurement needs 3 members, the environment has %d", len(b.Env.Members))
	}
	p := b.Env.Members[0]
	prefix, err = netip.ParsePrefix(p.PodCIDR)
	if err != nil || prefix.Bits() > 16 || !prefix.Addr().Is4() {
		return "", nil, prefix, fmt.Errorf("pod CIDR %q of %s is not an IPv4 /16 or wider", p.PodCIDR, p.Name)
	}
	if updates < 1 || updates >= 250*254 {
		return "", nil, prefix, fmt.Errorf("between 1 and %d updates", 250*254-1)
	}
	return p.Name, []string{b.Env.Members[1].Name, b.Env.Members[2].Name}, prefix, nil
}

// BesideLatency measures, in a new namespace, how long an EndpointSlice change in the
// provider (member1) takes to show in the dispatched slice of each consumer (member2,
// member3), whichever MultiClusterService implementation runs beside Karmada. Details go to
// r; the figures are returned.
func (b *Bench) BesideLatency(ctx context.Context, r *Report, namespace string, opts LatencyOptions) (*BesideResult, error) {
	provider, consumers, prefix, err := b.besideClusters(opts.Updates)
	if err != nil {
		return nil, err
	}
	st := stream{namespace: namespace, service: BesideService, slice: BesideService + "-bench"}
	res := &BesideResult{Namespace: namespace, Provider: provider, Consumers: consumers}
	r.Printf("Provider %s, consumers %v; MultiClusterService and Service %s/%s created in the control plane only (the "+
		"namespace reaches the members by Karmada's namespace sync, the Service by the MultiClusterService); one "+
		"hand-written EndpointSlice %s in %s; %d address changes started %s apart.\n\n",
		provider, consumers, st.namespace, st.service, st.slice, provider, opts.Updates, opts.Interval)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	setupStart := time.Now()
	seen, err := b.setupBesideStream(ctx, r, st, provider, consumers, prefix)
	if err != nil {
		return nil, err
	}
	res.Setup = time.Since(setupStart)
	r.Printf("Setup (namespace, its sync to the members, Service, slice, MultiClusterService) until the first address "+
		"was in both consumers: %s.\n\n", FormatDuration(res.Setup))

	cpuBefore := b.cpuTimes()
	machineBefore, _ := ReadMachineCPU()
	start := time.Now()
	u, err := b.writeUpdates(ctx, st, provider, prefix, opts)
	if err != nil {
		return nil, err
	}
	last := u.lastWritten()
	if last == "" {
		return nil, fmt.Errorf("every write failed, first: %w", u.errs[0])
	}
	res.SettleErr = seen.waitSeen(ctx, append([]string{provider}, consumers...), last, opts.Settle)
	res.Wall = time.Since(start)
	machineAfter, _ := ReadMachineCPU()
	cpuAfter := b.cpuTimes()
	res.Busy = Utilization(machineBefore, machineAfter)
	res.MachineBusy = machineAfter.Busy - machineBefore.Busy
	res.CPU = map[string]time.Duration{}
	for name, cpu := range cpuAfter {
		res.CPU[name] = cpu - cpuBefore[name]
	}
	res.Writes, res.Failed = len(u.took), len(u.errs)
	if list, err := b.kube(b.Env.ControlPlane.Name).DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range list.Items {
			res.ControlPlaneSlices = append(res.ControlPlaneSlices, s.Name)
		}
	}

	r.Printf("%d writes (write call p50 %s); machine CPU busy %.0f%% from the first write until the last address was everywhere.\n\n",
		res.Writes, FormatDuration(Summarize(u.took).P50), 100*res.Busy)
	if res.Failed > 0 {
		r.Printf("**%d writes failed**, first: %v\n\n", res.Failed, u.errs[0])
	}
	if res.SettleErr != nil {
		r.Printf("**Not everything settled**: %v\n\n", res.SettleErr)
	}
	r.Printf("EndpointSlices in %s of the control plane once settled: %v.\n\n", namespace, res.ControlPlaneSlices)
	worst := latencyTablesOf(r, seen, u, provider, consumers, besideStages)
	res.All = Summarize(delivered(worst))
	floor, _ := deliveries(seen, u, provider)
	res.Floor = Summarize(delivered(floor))
	for _, c := range consumers {
		lat, _ := deliveries(seen, u, c)
		res.Consumer = append(res.Consumer, Summarize(delivered(lat)))
	}
	r.Printf("\n")
	cpuSection(r, cpuBefore, cpuAfter, machineBefore, machineAfter, res.Wall, res.Writes, "update")
	return res, nil
}

// setupBesideStream creates the stream's namespace and Service in the control plane, waits
// for the namespace in every member, writes the provider's slice, watches every stage,
// creates the MultiClusterService and waits until the slice's first address is in every
// consumer.
func (b *Bench) setupBesideStream(ctx context.Context, r *Report, st stream, provider string, consumers []string, prefix netip.Prefix) (*sightings, error) {
	cp := b.kube(b.Env.ControlPlane.Name)
	if _, err := cp.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: st.namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s in the control plane: %w", st.namespace, err)
	}
	if err := b.waitNamespaceInMembers(ctx, st.namespace, 2*time.Minute); err != nil {
		return nil, err
	}
	if err := b.createService(ctx, b.Env.ControlPlane.Name, st.namespace, st.service); err != nil {
		return nil, err
	}
	initial := addressIn(prefix, 250*254).String() // never one of the updates' addresses
	if err := b.createSlice(ctx, provider, st.namespace, st.slice, st.service, initial); err != nil {
		return nil, err
	}
	seen := &sightings{first: map[string]map[string]time.Time{}}
	if err := b.watchBesideStages(ctx, st, provider, consumers, seen); err != nil {
		return nil, err
	}
	if err := b.createMCS(ctx, st.namespace, st.service, []string{provider}, consumers); err != nil {
		return nil, err
	}
	if err := seen.waitSeen(ctx, consumers, initial, 3*time.Minute); err != nil {
		r.Printf("**The first dispatch did not complete**: %v\n\n", err)
		b.besideEvidence(ctx, r, st)
		return nil, err
	}
	return seen, nil
}

// waitNamespaceInMembers waits until namespace exists in every member.
func (b *Bench) waitNamespaceInMembers(ctx context.Context, namespace string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, m := range b.Env.Members {
		for {
			_, err := b.kube(m.Name).CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) && ctx.Err() == nil {
				b.Logf("bench: namespace %s in %s: %v", namespace, m.Name, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("namespace %s not in member %s within %s (Karmada's namespace sync): %w", namespace, m.Name, timeout, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// watchBesideStages records in seen when each stage shows each address: the provider's own
// slice, the Works carrying the stream's slices in the provider's execution namespace
// (collected) and in each consumer's (dispatched), and the dispatched slice in each consumer.
func (b *Bench) watchBesideStages(ctx context.Context, st stream, provider string, consumers []string, seen *sightings) error {
	if err := b.watchSliceEnds(ctx, st, provider, consumers, seen); err != nil {
		return err
	}
	works := labels.Set{networkingv1alpha1.LabelMCSName: st.service, networkingv1alpha1.LabelMCSNamespace: st.namespace}
	return b.watchControlPlane(ctx, kube.Works, "", works, func(w *unstructured.Unstructured, deleted bool, at time.Time) {
		cluster, ok := naming.ClusterOfExecutionNamespace(w.GetNamespace())
		if deleted || !ok {
			return
		}
		if cluster == provider {
			seen.see(stageCollected, manifestAddresses(w), at)
		} else {
			seen.see(stageDispatched+cluster, manifestAddresses(w), at)
		}
	})
}

// DeleteMCS deletes the MultiClusterService name in namespace and waits until it is gone and
// no consumer holds a slice dispatched for it.
func (b *Bench) DeleteMCS(ctx context.Context, namespace, name string, consumers []string, timeout time.Duration) error {
	mcsClient := b.controlPlane().Resource(networkingv1alpha1.MultiClusterServiceGVR).Namespace(namespace)
	if err := mcsClient.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting MultiClusterService %s/%s: %w", namespace, name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		left, err := b.leftOf(ctx, namespace, name, consumers)
		if err == nil && left == "" {
			return nil
		}
		if err != nil {
			left = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("MultiClusterService %s/%s not cleaned up within %s: %s", namespace, name, timeout, left)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// leftOf says what is left of a deleted MultiClusterService: itself, or dispatched slices in
// a consumer ("" when nothing).
func (b *Bench) leftOf(ctx context.Context, namespace, name string, consumers []string) (string, error) {
	_, err := b.controlPlane().Resource(networkingv1alpha1.MultiClusterServiceGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return "the MultiClusterService (finalizers)", nil
	}
	if !apierrors.IsNotFound(err) {
		return "", err
	}
	for _, c := range consumers {
		list, err := b.kube(c).DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: dispatchedSelector(name).String()})
		if err != nil {
			return "", err
		}
		if n := len(list.Items); n > 0 {
			return fmt.Sprintf("%d dispatched slices in %s", n, c), nil
		}
	}
	return "", nil
}
