package mcs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The agent writes a slice's Work as karmada-agent's endpointsliceCollect controller does
// (names, labels, finalizer, suspension), and the control plane reads it back as it reads
// karmada-agent's.
func TestAgentCollectedWorkIsKarmadaAgentsAndReadsBack(t *testing.T) {
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "foo-abc", Namespace: "demo", UID: "u-1", Generation: 4, ResourceVersion: "77",
			Labels: map[string]string{networkingv1alpha1.LabelServiceName: "foo", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
	}
	work := AgentCollectedWork("member3", slice)

	assert.Equal(t, "karmada-es-member3", work.GetNamespace())
	assert.Equal(t, naming.WorkName("EndpointSlice", "foo-abc", "demo"), work.GetName())
	assert.Equal(t, map[string]string{
		"multiclusterservice.karmada.io/namespace": "demo",
		"multiclusterservice.karmada.io/name":      "foo",
		"endpointslice.karmada.io/managed-by":      "MultiClusterService",
	}, work.GetLabels())
	assert.Equal(t, []string{"karmada.io/mcs-endpointslice-dispatch-controller"}, work.GetFinalizers())
	suspended, _, _ := unstructured.NestedBool(work.Object, "spec", "suspendDispatching")
	assert.True(t, suspended)
	assert.True(t, IsCollected(work))
	assert.Equal(t, naming.RoleCollected, naming.RoleOf(work.GetLabels()))
	assert.False(t, IsCollectRequest(work))

	// The starter's informer of agent-collected Works selects it.
	selector, err := labels.Parse(networkingv1alpha1.LabelMCSName + "," + networkingv1alpha1.LabelEndpointSliceWorkManagedBy + ",!" + naming.LabelWorkRole)
	require.NoError(t, err)
	assert.True(t, selector.Matches(labels.Set(work.GetLabels())))

	read, err := sliceOfWork(work)
	require.NoError(t, err)
	assert.Equal(t, "foo-abc", read.Name)
	assert.Equal(t, "demo", read.Namespace)
	assert.Empty(t, read.ResourceVersion, "what its API server set is left out")
	assert.Equal(t, slice.Endpoints, read.Endpoints)
	assert.Equal(t, "true", read.Labels[naming.LabelManagedByKarmada])
	assert.Equal(t, "u-1", read.Annotations[naming.AnnotationResourceTemplateUID])
	assert.Equal(t, "4", read.Annotations[networkingv1alpha1.AnnotationEndpointSliceGeneration])

	same := AgentCollectedWork("member3", slice)
	assert.True(t, SameAgentWork(work, same))
	slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
	assert.False(t, SameAgentWork(work, AgentCollectedWork("member3", slice)))
}

func TestIsCollectRequest(t *testing.T) {
	in := CollectInput{MCS: Ref{Namespace: "demo", Name: "foo"}, Provider: "member3"}
	a := &Activities{}
	a.seen.put(in.MCS, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
		"metadata": map[string]any{"name": "foo", "namespace": "demo"}, "spec": map[string]any{"types": []any{"CrossCluster"}},
	}})
	request, err := a.collectRequest(t.Context(), in)
	require.NoError(t, err)
	assert.True(t, IsCollectRequest(request))
	assert.False(t, IsCollected(request))

	// What Pull clusters' agents collected before they wrote karmada-agent's Works.
	before := newWork("w", "karmada-es-member3", workLabels(in.MCS, naming.RoleCollected), nil, true, map[string]any{})
	assert.True(t, IsCollected(before))
}
