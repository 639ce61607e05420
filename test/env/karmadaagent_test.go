package env

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// TestKarmadaAgentPullMember turns member2 of a beside-Karmada environment into a Pull cluster
// served by Karmada's karmada-agent: the agent registers it and keeps it Ready, applies a Work
// of karmada-es-member2 into it and collects its EndpointSlices for a MultiClusterService's
// Work; killed, the Cluster leaves Ready within karmada-controller-manager's grace period;
// started again, it is Ready again. member1 stays a Push cluster.
func TestKarmadaAgentPullMember(t *testing.T) {
	e := startForTest(t, Options{Members: 2, BesideKarmada: true})
	t.Cleanup(func() { assert.NoError(t, e.Stop()) })
	ctx := t.Context()
	const member = "member2"
	m := e.Member(member)
	clusters := e.ControlPlane.Dynamic().Resource(ClusterGVR)
	before, err := clusters.Get(ctx, member, metav1.GetOptions{})
	require.NoError(t, err)
	// The agent reports an apiEndpoint that counts the connections it accepts: nothing may
	// dial a Pull member once karmada-controller-manager left it to its agent.
	endpoint, err := NewCountingEndpoint()
	require.NoError(t, err)
	t.Cleanup(func() { _ = endpoint.Close() })
	endpointFlag := "--cluster-api-endpoint=https://" + endpoint.Addr

	begin := time.Now()
	require.NoError(t, e.StartKarmadaAgent(ctx, member, endpointFlag))
	t.Logf("karmada-agent started to Cluster %s Pull and Ready (controller manager restart included): %.1fs", member, time.Since(begin).Seconds())
	dialledBefore := endpoint.Connections()

	t.Run("the agent registers the existing Cluster in Pull mode", func(t *testing.T) {
		after, err := clusters.Get(ctx, member, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, before.GetUID(), after.GetUID(), "the same Cluster, updated")
		assert.Equal(t, "Pull", syncMode(after))
		assert.Equal(t, "https://"+endpoint.Addr, nestedString(after, "spec", "apiEndpoint"))
		id := nestedString(before, "spec", "id")
		assert.NotEmpty(t, id, "joinCluster sets spec.id, the UID of the member's kube-system")
		assert.Equal(t, id, nestedString(after, "spec", "id"))
		for _, field := range []string{"secretRef", "impersonatorSecretRef"} {
			want, _, _ := unstructured.NestedStringMap(before.Object, "spec", field)
			got, _, _ := unstructured.NestedStringMap(after.Object, "spec", field)
			assert.Equal(t, want, got, "spec.%s", field)
		}
		require.NoError(t, conditionTrue(after, "Ready"))
		member1, err := clusters.Get(ctx, "member1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "Push", syncMode(member1))
		assert.NoError(t, conditionTrue(member1, "Ready"))
	})

	t.Run("the agent applies a Work of karmada-es-member2", func(t *testing.T) {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "pulled", Namespace: metav1.NamespaceDefault}, Data: map[string]string{"by": "karmada-agent"}}
		work := createWork(t, e, ExecutionNamespacePrefix+member, "pulled-configmap", nil, false, cm)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got, err := m.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "pulled", metav1.GetOptions{})
			if assert.NoError(c, err) {
				assert.Equal(c, "karmada-agent", got.Data["by"])
			}
			w, err := e.ControlPlane.Dynamic().Resource(workv1alpha1.WorkGVR).Namespace(work.GetNamespace()).Get(ctx, work.GetName(), metav1.GetOptions{})
			if assert.NoError(c, err) {
				assert.NoError(c, conditionTrue(w, "Applied"))
			}
		}, time.Minute, 200*time.Millisecond)
	})

	t.Run("the agent collects EndpointSlices for a MultiClusterService's Work", func(t *testing.T) {
		slice := &discoveryv1.EndpointSlice{
			TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-provided", Namespace: metav1.NamespaceDefault,
				Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.2.0.7"}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}},
		}
		_, err := m.Client().DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Create(ctx, slice, metav1.CreateOptions{})
		require.NoError(t, err)
		// The Work Karmada's multiclusterservice controller (karmadaflow, beside Karmada) puts
		// in a provider's execution namespace: the MultiClusterService, not to be applied.
		mcs := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
			"metadata": map[string]any{"name": "web", "namespace": metav1.NamespaceDefault},
			"spec":     map[string]any{"types": []any{"CrossCluster"}},
		}}
		createWork(t, e, ExecutionNamespacePrefix+member, "web-mcs", map[string]string{
			"multiclusterservice.karmada.io/namespace": metav1.NamespaceDefault,
			"multiclusterservice.karmada.io/name":      "web",
		}, true, mcs)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			works, err := e.ControlPlane.Dynamic().Resource(workv1alpha1.WorkGVR).Namespace(ExecutionNamespacePrefix+member).List(ctx, metav1.ListOptions{})
			if !assert.NoError(c, err) {
				return
			}
			var collected []string
			for _, w := range works.Items {
				manifests, _, _ := unstructured.NestedSlice(w.Object, "spec", "workload", "manifests")
				for _, raw := range manifests {
					obj := &unstructured.Unstructured{Object: raw.(map[string]any)}
					if obj.GetKind() == "EndpointSlice" && obj.GetName() == slice.Name {
						collected = append(collected, w.GetName())
						suspended, _, _ := unstructured.NestedBool(w.Object, "spec", "suspendDispatching")
						assert.True(c, suspended, "Work %s of a collected EndpointSlice is dispatched", w.GetName())
					}
				}
			}
			assert.Len(c, collected, 1, "Works holding EndpointSlice %s", slice.Name)
		}, time.Minute, 200*time.Millisecond)
	})

	t.Run("a killed agent leaves the Cluster not Ready; started again, Ready", func(t *testing.T) {
		require.NoError(t, e.StopKarmadaAgent(member))
		killed := time.Now()
		var notReady *metav1.Condition
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ready := readyCondition(ctx, c, e, member)
			if assert.NotNil(c, ready) && assert.NotEqual(c, metav1.ConditionTrue, ready.Status) {
				notReady = ready
			}
		}, time.Minute, 200*time.Millisecond)
		took := time.Since(killed)
		t.Logf("karmada-agent killed to Cluster %s Ready %s (%s: %s): %.1fs", member, notReady.Status, notReady.Reason, notReady.Message, took.Seconds())
		// --cluster-monitor-grace-period=10s, checked every --cluster-monitor-period=2s.
		assert.Less(t, took, 20*time.Second)

		begin := time.Now()
		require.NoError(t, e.StartKarmadaAgent(ctx, member, endpointFlag))
		t.Logf("karmada-agent restarted to Cluster %s Ready: %.1fs", member, time.Since(begin).Seconds())
		assert.Error(t, e.StartKarmadaAgent(ctx, member, endpointFlag), "a second agent for the same member")
	})

	t.Run("nothing dialled the Pull member's apiEndpoint", func(t *testing.T) {
		t.Logf("connections to the apiEndpoint: %d until the controller manager restarted, %d in all", dialledBefore, endpoint.Connections())
		assert.Equal(t, dialledBefore, endpoint.Connections())
	})

	t.Run("nothing connected outside loopback", func(t *testing.T) {
		assert.Empty(t, e.OutsideConnections())
	})
}

// nestedString is obj's string at fields, "" if there is none.
func nestedString(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

// createWork creates a Work in e's control plane, in namespace ns, holding objs, with labels
// and spec.suspendDispatching as given.
func createWork(t *testing.T, e *Env, ns, name string, labels map[string]string, suspendDispatching bool, objs ...runtime.Object) *unstructured.Unstructured {
	t.Helper()
	var manifests []any
	for _, obj := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, err)
		manifests = append(manifests, u)
	}
	work := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": workv1alpha1.WorkGVR.GroupVersion().String(), "kind": "Work",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"workload": map[string]any{"manifests": manifests}},
	}}
	if labels != nil {
		work.SetLabels(labels)
	}
	if suspendDispatching {
		require.NoError(t, unstructured.SetNestedField(work.Object, true, "spec", "suspendDispatching"))
	}
	created, err := e.ControlPlane.Dynamic().Resource(workv1alpha1.WorkGVR).Namespace(ns).Create(t.Context(), work, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

// readyCondition is Cluster name's Ready condition, nil if it has none or cannot be read.
func readyCondition(ctx context.Context, c *assert.CollectT, e *Env, name string) *metav1.Condition {
	cluster, err := e.ControlPlane.Dynamic().Resource(ClusterGVR).Get(ctx, name, metav1.GetOptions{})
	if !assert.NoError(c, err) {
		return nil
	}
	conditions, err := kube.Conditions(cluster)
	if !assert.NoError(c, err) {
		return nil
	}
	return meta.FindStatusCondition(conditions, "Ready")
}
