package mcs

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Collecting: a provider's own EndpointSlices recorded as suspended Works in its execution
// namespace.

// CollectEndpointSlices records the provider's EndpointSlices of the Service as Works in the
// provider's execution namespace, never to be applied back to it.
func (a *Activities) CollectEndpointSlices(ctx context.Context, in CollectInput) (CollectResult, error) {
	res, err := a.collectEndpointSlices(ctx, in)
	res.WorkCache = a.WorkCache.Instance()
	return res, a.Metrics.count("collect", err)
}

func (a *Activities) collectEndpointSlices(ctx context.Context, in CollectInput) (CollectResult, error) {
	res, desired, err := a.readProviderSlices(ctx, in)
	if err != nil {
		return res, err
	}
	res.Changed, err = a.syncWorksIn(ctx, naming.ExecutionNamespace(in.Provider), in.MCS, naming.RoleCollected, a.othersWroteBefore(in.EarlierWrites), desired)
	return res, err
}

// readProviderSlices reads the provider's EndpointSlices of the Service and returns them as
// the collected Works that record them (by name), with what the result reports of them.
func (a *Activities) readProviderSlices(ctx context.Context, in CollectInput) (CollectResult, map[string]*unstructured.Unstructured, error) {
	var res CollectResult
	member, err := a.Members.Get(ctx, in.Provider)
	if err != nil {
		return res, nil, err
	}
	selector := labels.Set{networkingv1alpha1.LabelServiceName: in.MCS.Name}.String()
	list, err := member.Kube.DiscoveryV1().EndpointSlices(in.MCS.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return res, nil, fmt.Errorf("listing EndpointSlices of %s in cluster %s: %w", in.MCS, in.Provider, err)
	}
	namespace := naming.ExecutionNamespace(in.Provider)
	desired := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		slice := &list.Items[i]
		if !Collectable(slice) {
			continue
		}
		manifest := collectedSliceManifest(slice)
		name := naming.WorkName("EndpointSlice", slice.Name, slice.Namespace)
		lbls := workLabels(in.MCS, naming.RoleCollected)
		lbls[networkingv1alpha1.LabelEndpointSliceWorkManagedBy] = networkingv1alpha1.ManagedByMultiClusterService
		desired[name] = newWork(name, namespace, lbls, nil, true, manifest)
		res.Slices = append(res.Slices, SliceRef{Name: slice.Name, Generation: slice.Generation})
	}
	slices.SortFunc(res.Slices, func(x, y SliceRef) int { return cmp.Compare(x.Name, y.Name) })
	return res, desired, nil
}

// CollectableSelector selects, in a member, the slices Collectable accepts: those of a
// Service that neither karmadaflow nor Karmada dispatched.
var CollectableSelector = networkingv1alpha1.LabelServiceName + "," +
	networkingv1alpha1.LabelEndpointSliceManagedBy + " notin (" + networkingv1alpha1.ManagedByEndpointSliceDispatch + "," +
	networkingv1alpha1.ManagedByEndpointSliceKarmada + ")"

// Collectable tells whether a slice is the cluster's own: slices that karmadaflow or Karmada
// dispatched are never collected, so a cluster that both provides and consumes never loops.
func Collectable(slice *discoveryv1.EndpointSlice) bool {
	switch slice.Labels[networkingv1alpha1.LabelEndpointSliceManagedBy] {
	case networkingv1alpha1.ManagedByEndpointSliceDispatch, networkingv1alpha1.ManagedByEndpointSliceKarmada:
		return false
	}
	return true
}
