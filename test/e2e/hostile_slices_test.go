package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	executionactivities "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/activities/health"
	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	memberclients "github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// TestMCSHostileCollectedSlices: member3 is a Pull provider whose agent is compromised. It
// writes, in its execution namespace, collected Works of the MultiClusterService demo-like
// ns/foo whose slices are of kube-system/kube-dns and of another Service of the namespace, and
// one that holds two manifests. None of them ever reaches a consumer (every member's dispatched
// slices are watched from before they were written); each is counted and reported by an Event
// on the MultiClusterService, which proves that dispatch saw them; member1's slices reach
// member2 throughout, and the dispatch of the lot succeeds.
//
// Standalone, the compromised agent is played in this process with exactly the chart's agent
// identities (startCompromisedAgent): its Work execution and health as karmadaflow's agent does
// them, and no collection of its own, which leaves its execution namespace as it writes it; it
// writes the Works with its own control-plane identity. Beside Karmada, it is karmada-agent, and the Works are written
// beside it, as it labels its own.
func TestMCSHostileCollectedSlices(t *testing.T) {
	m1, m2, m3 := members(t)
	ctx := context.Background()
	ns := testNamespace(t)
	received := watchDispatchedSlices(t)

	refused, err := env.NewCountingEndpoint()
	require.NoError(t, err)
	t.Cleanup(func() { _ = refused.Close() })
	agentWrites := testEnv.ControlPlane.Dynamic()
	if besideKarmada() {
		pullAgentOf(t, m3, "https://"+refused.Addr).start()
	} else {
		agentWrites = startCompromisedAgent(t, m3, "https://"+refused.Addr)
	}
	expectClusterReadyWith(t, m3, "True", "")

	// Written before the MultiClusterService exists: its first reconcile dispatches from them.
	planted := []*unstructured.Unstructured{
		plantedWork(m3, ns, app, "kube-system", "kube-dns-planted", "kube-dns"),
		plantedWork(m3, ns, app, ns, "bar-planted", "bar"),
	}
	plant(t, agentWrites, planted...)

	exposeFromMember1(t, ns, 2)
	createMCS(t, ns, app, mcsSpec([]string{m1, m3}, []string{m2}))
	logStateOnFailure(t, "mcs/"+ns+"/"+app, "cluster/"+m3)

	// Seen and refused: counted and reported. Nothing of them ever reached a member.
	eventually(t, 90*time.Second, func() error {
		if bad := received.hostile(); len(bad) > 0 {
			t.Fatalf("planted slices reached members: %s", strings.Join(bad, "; "))
		}
		return droppedSeen(t, ns, m3, map[string]string{
			mcsactivities.DropNamespace: "EndpointSlice kube-system/kube-dns-planted",
			mcsactivities.DropService:   "EndpointSlice " + ns + "/bar-planted",
		})
	})
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})

	// A collected Work that holds no single EndpointSlice stops nothing: the full reconcile a
	// spec change asks for dispatches member1's slices, and says so, with it in place.
	undecodable := plantedWork(m3, ns, app, ns, "two-planted", app)
	manifests, _, _ := unstructured.NestedSlice(undecodable.Object, "spec", "workload", "manifests")
	require.NoError(t, unstructured.SetNestedSlice(undecodable.Object, append(manifests, manifests[0]), "spec", "workload", "manifests"))
	plant(t, agentWrites, undecodable)
	scale(t, testEnv.Member(m1), ns, app, 3)
	spec := mcsSpec([]string{m1, m3}, []string{m2})
	spec["ports"] = []any{map[string]any{"name": "http", "port": int64(80)}}
	updateMCSSpec(t, ns, app, spec)
	eventually(t, 60*time.Second, func() error {
		return droppedSeen(t, ns, m3, map[string]string{mcsactivities.DropUndecodable: undecodable.GetName()})
	})
	expectDispatchedAtLatestGeneration(t, ns, app)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 3})

	if bad := received.hostile(); len(bad) > 0 {
		t.Fatalf("planted slices reached members: %s", strings.Join(bad, "; "))
	}
	dispatchedWorks, err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).Namespace(naming.ExecutionNamespace(m2)).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, w := range dispatchedWorks.Items {
		require.NotContains(t, w.GetName(), "planted", "a Work dispatched from a planted one")
	}
}

// plantedWork is a collected Work of the MultiClusterService mcsNamespace/mcsName in
// provider's execution namespace, labelled as the provider's collector labels its own
// (karmada-agent, and karmadaflow's agent alike), holding an EndpointSlice
// namespace/name of service.
func plantedWork(provider, mcsNamespace, mcsName, namespace, name, service string) *unstructured.Unstructured {
	labels := map[string]any{
		networkingv1alpha1.LabelMCSName:                    mcsName,
		networkingv1alpha1.LabelMCSNamespace:               mcsNamespace,
		networkingv1alpha1.LabelEndpointSliceWorkManagedBy: networkingv1alpha1.ManagedByMultiClusterService,
	}
	slice := map[string]any{
		"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata": map[string]any{"name": name, "namespace": namespace,
			"labels": map[string]any{networkingv1alpha1.LabelServiceName: service}},
		"addressType": string(discoveryv1.AddressTypeIPv4),
		"endpoints":   []any{map[string]any{"addresses": []any{"10.250.0.53"}, "conditions": map[string]any{"ready": true}}},
		"ports":       []any{map[string]any{"name": "dns", "port": int64(53), "protocol": "UDP"}},
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
		"metadata": map[string]any{"name": naming.WorkName("EndpointSlice", name, namespace), "namespace": naming.ExecutionNamespace(provider),
			"labels": labels},
		"spec": map[string]any{"suspendDispatching": true, "workload": map[string]any{"manifests": []any{slice}}},
	}}
}

// plant writes works with client, and has them deleted when the test ends.
func plant(t *testing.T, client dynamic.Interface, works ...*unstructured.Unstructured) {
	t.Helper()
	for _, w := range works {
		_, err := client.Resource(kube.Works).Namespace(w.GetNamespace()).Create(context.Background(), w, metav1.CreateOptions{})
		require.NoError(t, err, "planting Work %s/%s", w.GetNamespace(), w.GetName())
		t.Cleanup(func() {
			err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).Namespace(w.GetNamespace()).Delete(context.Background(), w.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting the planted Work %s/%s: %v", w.GetNamespace(), w.GetName(), err)
			}
		})
	}
}

// droppedSeen tells whether each reason of want was reported on the MultiClusterService ns/app
// by an Event naming its part of want, and counted for provider by a worker.
func droppedSeen(t *testing.T, ns, provider string, want map[string]string) error {
	t.Helper()
	list, err := testEnv.ControlPlane.Client().EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "regarding.kind=MultiClusterService,regarding.name=" + app + ",reason=" + mcsactivities.EventReasonCollectedSliceDropped,
	})
	if err != nil {
		return err
	}
	for reason, part := range want {
		found := false
		for _, e := range list.Items {
			found = found || strings.Contains(e.Note, part)
		}
		if !found {
			return fmt.Errorf("no %s Event names %q (%s); %d of that reason", mcsactivities.EventReasonCollectedSliceDropped, part, reason, len(list.Items))
		}
		series := `mcs_collected_slices_dropped_total{cluster="` + provider + `",reason="` + reason + `"}`
		if droppedTotal(t, series) == 0 {
			return fmt.Errorf("no worker counts %s", series)
		}
	}
	return nil
}

// droppedTotal sums series over the workers: either may have run a dispatch.
func droppedTotal(t *testing.T, series string) float64 {
	var sum float64
	for _, w := range svc.Workers() {
		v, _ := metricValue(t, w, series)
		sum += v
	}
	return sum
}

// expectDispatchedAtLatestGeneration waits until EndpointSliceDispatched is True for the
// MultiClusterService's latest generation.
func expectDispatchedAtLatestGeneration(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		mcs, err := getMCS(ns, name)
		if err != nil {
			return err
		}
		for _, c := range mcs.Status.Conditions {
			if c.Type != networkingv1alpha1.ConditionEndpointSliceDispatched {
				continue
			}
			if c.ObservedGeneration != mcs.Generation || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("%s is %s at generation %d (%s), want True at %d", c.Type, c.Status, c.ObservedGeneration, c.Message, mcs.Generation)
			}
			return nil
		}
		return fmt.Errorf("no %s condition", networkingv1alpha1.ConditionEndpointSliceDispatched)
	})
}

// dispatchedSlices records every dispatched EndpointSlice any member holds, from the moment
// the watch began.
type dispatchedSlices struct {
	mu  sync.Mutex
	bad []string
}

// hostile names the planted slices members received: any dispatched slice in kube-system, or
// made from a planted one.
func (d *dispatchedSlices) hostile() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.bad...)
}

// watchDispatchedSlices watches the dispatched slices of every member until the test ends.
func watchDispatchedSlices(t *testing.T) *dispatchedSlices {
	t.Helper()
	d := &dispatchedSlices{}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for _, m := range testEnv.Members {
		factory := informers.NewSharedInformerFactoryWithOptions(m.Client(), 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = networkingv1alpha1.LabelEndpointSliceManagedBy + "=" + networkingv1alpha1.ManagedByEndpointSliceDispatch
		}))
		informer := factory.Discovery().V1().EndpointSlices().Informer()
		record := func(obj any) {
			s, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok {
				return
			}
			service := s.Labels[networkingv1alpha1.LabelServiceName]
			if s.Namespace == "kube-system" || service == "kube-dns" || service == "bar" || strings.Contains(s.Name, "planted") {
				d.mu.Lock()
				d.bad = append(d.bad, fmt.Sprintf("%s holds %s/%s (Service %q)", m.Name, s.Namespace, s.Name, service))
				d.mu.Unlock()
			}
		}
		_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) }})
		require.NoError(t, err)
		factory.Start(stop)
		require.True(t, cache.WaitForCacheSync(stop, informer.HasSynced), "watching the dispatched slices of %s", m.Name)
	}
	return d
}

// startCompromisedAgent makes cluster a Pull cluster at endpoint until the test ends, and plays
// its compromised agent in this process with the chart's agent identities and nothing else:
// it does the agent's honest work (applies the Works of its execution namespace to its member,
// probes the member, writes its Cluster's Ready condition and renews its Lease, with the code
// the agent runs), but collects nothing, leaving the execution namespace as it writes it. It
// returns the agent's client of the control plane.
func startCompromisedAgent(t *testing.T, cluster, endpoint string) dynamic.Interface {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	restorePush(t, cluster)
	memberKubeconfig, controlPlaneKubeconfig, err := svc.AgentIdentities(ctx, testEnv.Member(cluster))
	require.NoError(t, err)
	memberConfig, err := clientcmd.BuildConfigFromFlags("", memberKubeconfig)
	require.NoError(t, err)
	controlPlaneConfig, err := clientcmd.BuildConfigFromFlags("", controlPlaneKubeconfig)
	require.NoError(t, err)
	controlPlane, err := dynamic.NewForConfig(controlPlaneConfig)
	require.NoError(t, err)
	leases, err := kubernetes.NewForConfig(controlPlaneConfig)
	require.NoError(t, err)
	registry, err := memberclients.NewOwnRegistry(cluster, memberConfig)
	require.NoError(t, err)
	patchCluster(t, cluster, "Pull", endpoint)

	apply := &executionactivities.Activities{ControlPlane: controlPlane, Members: registry, Parallelism: 4, Agent: true,
		Metrics: executionactivities.NewMetrics(prometheus.NewRegistry())}
	probe := &health.Activities{ControlPlane: controlPlane, Members: registry, Agent: true}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := renewAgentLease(ctx, leases.CoordinationV1().Leases(naming.ExecutionNamespace(cluster))); err != nil && ctx.Err() == nil {
				t.Logf("compromised agent: %v", err)
			}
			if _, err := probe.ProbeCluster(ctx, health.ProbeInput{Cluster: cluster}); err != nil && ctx.Err() == nil {
				t.Logf("compromised agent: probe: %v", err)
			}
			if _, err := apply.ApplyWorks(ctx, executionactivities.ApplyInput{Cluster: cluster, All: true}); err != nil && ctx.Err() == nil {
				t.Logf("compromised agent: apply: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return controlPlane
}

// renewAgentLease creates or renews the agent's Lease, as the agent does.
func renewAgentLease(ctx context.Context, leases coordinationclient.LeaseInterface) error {
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, naming.AgentLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: naming.AgentLease},
			Spec: coordinationv1.LeaseSpec{AcquireTime: &now, RenewTime: &now}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
