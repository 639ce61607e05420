package mcs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

func validMCS() *networkingv1alpha1.MultiClusterService {
	return &networkingv1alpha1.MultiClusterService{
		ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "default"},
		Spec: networkingv1alpha1.MultiClusterServiceSpec{
			Types:            []networkingv1alpha1.ExposureType{"CrossCluster"},
			Ports:            []networkingv1alpha1.ExposurePort{{Name: "http", Port: 80}},
			ProviderClusters: []networkingv1alpha1.ClusterSelector{{Name: "member1"}},
		},
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	assert.Empty(t, Validate(validMCS()))
	cases := map[string]func(*networkingv1alpha1.MultiClusterService){
		"metadata.name":        func(m *networkingv1alpha1.MultiClusterService) { m.Name = "1foo" },
		"spec.types: at least": func(m *networkingv1alpha1.MultiClusterService) { m.Spec.Types = nil },
		"spec.types[0]": func(m *networkingv1alpha1.MultiClusterService) {
			m.Spec.Types = []networkingv1alpha1.ExposureType{"NodePort"}
		},
		"at most one distinct type": func(m *networkingv1alpha1.MultiClusterService) {
			m.Spec.Types = []networkingv1alpha1.ExposureType{"CrossCluster", "LoadBalancer"}
		},
		"spec.ports[0].port":            func(m *networkingv1alpha1.MultiClusterService) { m.Spec.Ports[0].Port = 70000 },
		"spec.ports[0].name":            func(m *networkingv1alpha1.MultiClusterService) { m.Spec.Ports[0].Name = "Bad_Name" },
		"duplicates spec.ports[0].name": func(m *networkingv1alpha1.MultiClusterService) { m.Spec.Ports = append(m.Spec.Ports, m.Spec.Ports[0]) },
		"spec.providerClusters[0].name": func(m *networkingv1alpha1.MultiClusterService) { m.Spec.ProviderClusters[0].Name = "" },
		"spec.consumerClusters[0].name": func(m *networkingv1alpha1.MultiClusterService) {
			m.Spec.ConsumerClusters = []networkingv1alpha1.ClusterSelector{{Name: "UPPER"}}
		},
		"spec.serviceProvisionClusters[0]": func(m *networkingv1alpha1.MultiClusterService) {
			m.Spec.ServiceProvisionClusters = []string{strings.Repeat("a", 49)}
		},
		"spec.serviceConsumptionClusters[0]": func(m *networkingv1alpha1.MultiClusterService) { m.Spec.ServiceConsumptionClusters = []string{"a.b"} },
		"spec.range.clusterNames[0]": func(m *networkingv1alpha1.MultiClusterService) {
			m.Spec.Range = &networkingv1alpha1.ExposureRange{ClusterNames: []string{"-x"}}
		},
	}
	for field, mutate := range cases {
		t.Run(field, func(t *testing.T) {
			m := validMCS()
			mutate(m)
			problems := Validate(m)
			require.Len(t, problems, 1, "%v", problems)
			assert.Contains(t, problems[0], field)
		})
	}
}

func TestServiceManifestDropsClusterFieldsAndFiltersPorts(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "default", ResourceVersion: "7",
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "me"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "metrics", Port: 9090}},
		},
	}
	m, err := serviceManifest(svc, []PortFilter{{Port: 80}})
	require.NoError(t, err)
	u := unstructured.Unstructured{Object: m}
	assert.Equal(t, map[string]string{"keep": "me"}, u.GetAnnotations())
	assert.Empty(t, u.GetResourceVersion())
	_, found, _ := unstructured.NestedString(m, "spec", "clusterIP")
	assert.False(t, found)
	ports, _, _ := unstructured.NestedSlice(m, "spec", "ports")
	require.Len(t, ports, 1)
	assert.Equal(t, "http", ports[0].(map[string]any)["name"])
}

// A headless Service stays headless and a dual-stack one dual-stack, as Karmada propagates them.
func TestServiceManifestKeepsHeadlessAndIPFamilies(t *testing.T) {
	dual := corev1.IPFamilyPolicyRequireDualStack
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, ClusterIPs: []string{corev1.ClusterIPNone},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, IPFamilyPolicy: &dual,
			Ports: []corev1.ServicePort{{Name: "sql", Port: 5432}}}}
	m, err := serviceManifest(headless, nil)
	require.NoError(t, err)
	clusterIP, _, _ := unstructured.NestedString(m, "spec", "clusterIP")
	assert.Equal(t, corev1.ClusterIPNone, clusterIP)
	clusterIPs, _, _ := unstructured.NestedStringSlice(m, "spec", "clusterIPs")
	assert.Equal(t, []string{corev1.ClusterIPNone}, clusterIPs)
	families, _, _ := unstructured.NestedStringSlice(m, "spec", "ipFamilies")
	assert.Equal(t, []string{"IPv4", "IPv6"}, families)
	policy, _, _ := unstructured.NestedString(m, "spec", "ipFamilyPolicy")
	assert.Equal(t, string(dual), policy)
}

func TestDispatchedSliceIsRenamedAndLabelled(t *testing.T) {
	http, metrics := "http", "metrics"
	source := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "foo-abc", Namespace: "default",
			Labels:      map[string]string{networkingv1alpha1.LabelServiceName: "foo"},
			Annotations: map[string]string{networkingv1alpha1.AnnotationEndpointSliceGeneration: "3"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.5"}, NodeName: &http}},
		Ports:       []discoveryv1.EndpointPort{{Name: &http}, {Name: &metrics}},
	}
	m := dispatchedSliceManifest(source, Ref{Namespace: "default", Name: "foo"}, "member1", []string{"http"})
	u := unstructured.Unstructured{Object: m}
	assert.Equal(t, "member1.foo-abc", u.GetName())
	assert.Equal(t, "default", u.GetNamespace())
	assert.Equal(t, networkingv1alpha1.ManagedByEndpointSliceDispatch, u.GetLabels()[networkingv1alpha1.LabelEndpointSliceManagedBy])
	assert.Equal(t, "foo", u.GetLabels()[networkingv1alpha1.LabelServiceName])
	assert.Equal(t, "member1", u.GetAnnotations()[networkingv1alpha1.AnnotationProvisionCluster])
	assert.Equal(t, "3", u.GetAnnotations()[networkingv1alpha1.AnnotationEndpointSliceGeneration])
	ports, _, _ := unstructured.NestedSlice(m, "ports")
	assert.Len(t, ports, 1)
	eps, _, _ := unstructured.NestedSlice(m, "endpoints")
	_, hasNode := eps[0].(map[string]any)["nodeName"]
	assert.False(t, hasNode, "provider node names do not travel")

	assert.False(t, Collectable(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: u.GetLabels()}}),
		"a dispatched slice is never collected again")
	assert.True(t, Collectable(source))
}

func TestWorkHashChangesWithContent(t *testing.T) {
	a := newWork("w", "ns", map[string]string{"l": "1"}, nil, true, map[string]any{"x": 1})
	b := newWork("w", "ns", map[string]string{"l": "1"}, nil, true, map[string]any{"x": 1})
	c := newWork("w", "ns", map[string]string{"l": "1"}, nil, true, map[string]any{"x": 2})
	key := "karmadaflow.io/manifest-hash"
	assert.Equal(t, a.GetAnnotations()[key], b.GetAnnotations()[key])
	assert.NotEqual(t, a.GetAnnotations()[key], c.GetAnnotations()[key])
	suspended, _, _ := unstructured.NestedBool(a.Object, "spec", "suspendDispatching")
	assert.True(t, suspended)
}

// Beside Karmada, its execution controller updates and deletes only member objects marked as
// its own, and takes over an existing one only with conflict resolution overwrite.
func TestWorkManifestsCarryKarmadasMarks(t *testing.T) {
	source := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "web"}}}
	work := newWork("service-web", "karmada-es-member1", nil, serviceWorkAnnotations, false, source)
	manifests, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
	require.Len(t, manifests, 1)
	m := unstructured.Unstructured{Object: manifests[0].(map[string]any)}
	assert.Equal(t, map[string]string{"app": "web", "karmada.io/managed": "true"}, m.GetLabels())
	assert.Equal(t, map[string]string{"work.karmada.io/name": "service-web", "work.karmada.io/namespace": "karmada-es-member1",
		"work.karmada.io/conflict-resolution": "overwrite"}, m.GetAnnotations())
	assert.Equal(t, map[string]any{"app": "web"}, source["metadata"].(map[string]any)["labels"], "the source manifest is not written")

	slice := newWork("eps", "karmada-es-member2", nil, nil, false, map[string]any{"metadata": map[string]any{"name": "s"}})
	manifests, _, _ = unstructured.NestedSlice(slice.Object, "spec", "workload", "manifests")
	m = unstructured.Unstructured{Object: manifests[0].(map[string]any)}
	assert.Equal(t, "true", m.GetLabels()["karmada.io/managed"])
	assert.NotContains(t, m.GetAnnotations(), "work.karmada.io/conflict-resolution", "only the Service overwrites")
}
