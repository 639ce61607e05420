package mcs

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

var demoFoo = Ref{Namespace: "demo", Name: "foo"}

// collectedWork is a Work in provider's execution namespace holding the slice namespace/name
// of service, as collection records it.
func collectedWork(provider, namespace, name, service string) unstructured.Unstructured {
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{networkingv1alpha1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	work := newWork(naming.WorkName("EndpointSlice", name, namespace), naming.ExecutionNamespace(provider),
		workLabels(demoFoo, naming.RoleCollected), nil, true, collectedSliceManifest(slice))
	return *work
}

// dispatchedSlices are the EndpointSlices of desired Works, by name.
func dispatchedSlices(t *testing.T, desired map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, work := range desired {
		manifests, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
		require.Len(t, manifests, 1)
		slice := &unstructured.Unstructured{Object: manifests[0].(map[string]any)}
		out[slice.GetName()] = slice
	}
	return out
}

// Provider a's slice b-x and provider a-b's slice x reach the consumer as two slices, each in
// a Work of its own.
func TestSameLookingSlicesOfTwoProvidersStayApart(t *testing.T) {
	in := DispatchInput{MCS: demoFoo, Consumer: "c", Providers: []string{"a", "a-b"}}
	desired, dropped := desiredDispatched(in, nil, map[string][]unstructured.Unstructured{
		"a":   {collectedWork("a", "demo", "b-x", "foo")},
		"a-b": {collectedWork("a-b", "demo", "x", "foo")},
	})
	assert.Empty(t, dropped)
	require.Len(t, desired, 2, "one Work per provider's slice")
	got := dispatchedSlices(t, desired)
	assert.ElementsMatch(t, []string{"a.b-x", "a-b.x"}, slices.Collect(maps.Keys(got)))
	assert.Equal(t, "a", got["a.b-x"].GetAnnotations()[networkingv1alpha1.AnnotationProvisionCluster])
	assert.Equal(t, "a-b", got["a-b.x"].GetAnnotations()[networkingv1alpha1.AnnotationProvisionCluster])
}

// A collected Work whose slice is of another namespace or Service, or that holds no single
// EndpointSlice, is left out with its reason; the provider's other slices are dispatched, into
// the MultiClusterService's namespace and for its Service.
func TestCollectedSlicesOfAnotherServiceAreDropped(t *testing.T) {
	undecodable := collectedWork("m3", "demo", "two", "foo")
	manifests, _, _ := unstructured.NestedSlice(undecodable.Object, "spec", "workload", "manifests")
	require.NoError(t, unstructured.SetNestedSlice(undecodable.Object, append(manifests, manifests[0]), "spec", "workload", "manifests"))
	in := DispatchInput{MCS: demoFoo, Consumer: "c", Providers: []string{"m3"}}
	desired, dropped := desiredDispatched(in, nil, map[string][]unstructured.Unstructured{"m3": {
		collectedWork("m3", "kube-system", "kube-dns-abc", "kube-dns"),
		collectedWork("m3", "demo", "bar-abc", "bar"),
		collectedWork("m3", "demo", "foo-abc", "foo"),
		undecodable,
	}})
	reasons := map[string]string{}
	for _, d := range dropped {
		assert.Equal(t, "m3", d.Provider)
		assert.Contains(t, d.Work, naming.ExecutionNamespace("m3")+"/")
		reasons[d.Work] = d.Reason
	}
	assert.Equal(t, map[string]string{
		"karmada-es-m3/" + naming.WorkName("EndpointSlice", "kube-dns-abc", "kube-system"): DropNamespace,
		"karmada-es-m3/" + naming.WorkName("EndpointSlice", "bar-abc", "demo"):             DropService,
		"karmada-es-m3/" + undecodable.GetName():                                           DropUndecodable,
	}, reasons)
	got := dispatchedSlices(t, desired)
	require.Equal(t, []string{"m3.foo-abc"}, slices.Collect(maps.Keys(got)))
	assert.Equal(t, "demo", got["m3.foo-abc"].GetNamespace())
	assert.Equal(t, "foo", got["m3.foo-abc"].GetLabels()[networkingv1alpha1.LabelServiceName])
}

// Works dispatched under the names of before (<provider>-<slice>) are removed by the next
// dispatch, which writes them under the new ones.
func TestWorksOfOldDispatchedNamesAreReplaced(t *testing.T) {
	in := DispatchInput{MCS: demoFoo, Consumer: "c", Providers: []string{"m1"}}
	desired, _ := desiredDispatched(in, nil, map[string][]unstructured.Unstructured{"m1": {collectedWork("m1", "demo", "foo-abc", "foo")}})
	old := heldWork(naming.ExecutionNamespace("c"), naming.WorkName("EndpointSlice", "m1-foo-abc", "demo"), "h", "m1", false)
	plan := planWorkSync([]unstructured.Unstructured{old}, sortedWorks(desired), in.Providers)
	assert.Equal(t, []string{"karmada-es-c/" + old.GetName()}, names(plan.remove))
	assert.Equal(t, []string{"karmada-es-c/" + naming.WorkName("EndpointSlice", "m1.foo-abc", "demo")}, names(plan.write))
}
