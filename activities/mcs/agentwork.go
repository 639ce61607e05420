package mcs

import (
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The agent's side of collecting through an agent (agentcollect.go is the control plane's):
// karmadaflow's agent of a Pull cluster writes the Works karmada-agent's endpointsliceCollect
// controller writes, so that the control plane reads both alike (ReadAgentCollection).

// AgentCollectedWork is the Work in which the agent of cluster records one of its member's
// EndpointSlices, as karmada-agent's endpointsliceCollect controller does: in
// karmada-es-<cluster>, named after the slice (naming.WorkName), labelled with the
// MultiClusterService (the slice's namespace and Service) and as managed by
// MultiClusterService, held by the endpointsliceDispatch finalizer until the control plane has
// seen it go, and suspended (nothing is applied from it). Its manifest is the slice without
// what its API server set, marked as Karmada marks its Works' manifests, with the slice's
// generation and UID.
func AgentCollectedWork(cluster string, slice *discoveryv1.EndpointSlice) *unstructured.Unstructured {
	namespace := naming.ExecutionNamespace(cluster)
	name := naming.WorkName("EndpointSlice", slice.Name, slice.Namespace)
	labels := map[string]string{
		networkingv1alpha1.LabelMCSNamespace:               slice.Namespace,
		networkingv1alpha1.LabelMCSName:                    slice.Labels[networkingv1alpha1.LabelServiceName],
		networkingv1alpha1.LabelEndpointSliceWorkManagedBy: networkingv1alpha1.ManagedByMultiClusterService,
	}
	manifest := collectedSliceManifest(slice)
	metadata, _ := manifest["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	if annotations != nil {
		annotations[naming.AnnotationResourceTemplateUID] = string(slice.UID)
	}
	work := newWork(name, namespace, labels, nil, true, manifest)
	work.SetFinalizers([]string{naming.FinalizerSliceDispatch})
	return work
}

// IsCollectRequest tells whether a Work asks the agent of its cluster to collect the slices of
// a MultiClusterService's Service: it holds the MultiClusterService, as the Works Karmada's
// MultiClusterService controller and karmadaflow (naming.RoleCollectRequest) write do.
func IsCollectRequest(work *unstructured.Unstructured) bool {
	manifests, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
	return slices.ContainsFunc(manifests, func(m any) bool {
		obj, ok := m.(map[string]any)
		return ok && obj["kind"] == "MultiClusterService" && obj["apiVersion"] == networkingv1alpha1.GroupVersion.String()
	})
}

// IsCollected tells whether a Work records a slice collected from its cluster: one an agent
// wrote (AgentCollectedWork, karmada-agent's), or one written with karmadaflow's role
// collected, as Pull clusters' agents wrote them before they wrote karmada-agent's Works (an
// agent rewrites or removes those).
func IsCollected(work *unstructured.Unstructured) bool {
	return naming.RoleOf(work.GetLabels()) == naming.RoleCollected
}

// SameAgentWork tells whether the Work held already is the desired one: the same manifests,
// labels and annotations (by their hash), held by the same finalizer.
func SameAgentWork(held, desired *unstructured.Unstructured) bool {
	return held.GetAnnotations()[naming.AnnotationManifestHash] == desired.GetAnnotations()[naming.AnnotationManifestHash] &&
		slices.Contains(held.GetFinalizers(), naming.FinalizerSliceDispatch) &&
		held.GetLabels()[networkingv1alpha1.LabelMCSName] == desired.GetLabels()[networkingv1alpha1.LabelMCSName]
}
