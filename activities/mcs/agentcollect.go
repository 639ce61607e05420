package mcs

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Collecting through karmada-agent: beside Karmada, a Pull provider runs karmada-agent, whose
// endpointsliceCollect controller collects the provider's slices into Works of its execution
// namespace once a Work there holds the MultiClusterService, as Karmada's MultiClusterService
// controller writes it. karmadaflow writes that Work and reads what the agent collected: the
// control plane never dials the member, and karmadaflow never writes the agent's Works.

// ReadAgentCollection has the provider's karmada-agent collect the slices of the Service (the
// collect-request Work) and reports what it collected so far. Changed is always set: the
// collected Works are the agent's, written whenever it saw a change, and the starter tells
// of each.
func (a *Activities) ReadAgentCollection(ctx context.Context, in CollectInput) (CollectResult, error) {
	res, err := a.readAgentCollection(ctx, in)
	res.WorkCache = a.WorkCache.Instance()
	return res, a.Metrics.count("collect", err)
}

func (a *Activities) readAgentCollection(ctx context.Context, in CollectInput) (CollectResult, error) {
	res := CollectResult{Changed: true}
	request, err := a.collectRequest(ctx, in)
	if err != nil {
		return res, err
	}
	works, err := a.listWorksOfOthers(ctx, in.MCS, a.othersWroteBefore(in.EarlierWrites), naming.RoleCollected, naming.RoleCollectRequest)
	if err != nil {
		return res, err
	}
	namespace := naming.ExecutionNamespace(in.Provider)
	if _, err := a.syncWorks(ctx, worksIn(works, namespace, naming.RoleCollectRequest), map[string]*unstructured.Unstructured{request.GetName(): request}, nil, nil); err != nil {
		return res, err
	}
	for _, w := range worksIn(works, namespace, naming.RoleCollected) {
		if w.GetDeletionTimestamp() != nil { // the slice is gone from the member
			if err := a.releaseSliceDispatch(ctx, &w); err != nil {
				return res, err
			}
			continue
		}
		slice, dropped := collectedSlice(&w, in.Provider, in.MCS)
		if dropped != nil {
			continue // left out of dispatch too, which reports it
		}
		res.Slices = append(res.Slices, SliceRef{Name: slice.Name, Generation: slice.Generation})
	}
	slices.SortFunc(res.Slices, func(x, y SliceRef) int { return cmp.Compare(x.Name, y.Name) })
	return res, nil
}

// collectRequest is the Work holding the MultiClusterService in the provider's execution
// namespace, suspended (nothing is applied to the member), named and labelled as Karmada's
// MultiClusterService controller names and labels its own.
func (a *Activities) collectRequest(ctx context.Context, in CollectInput) (*unstructured.Unstructured, error) {
	// The copy ObserveMCS read: a spec change has the workflow observe before it collects.
	obj := a.seen.get(in.MCS)
	if obj == nil {
		var err error
		if obj, err = a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(in.MCS.Namespace).Get(ctx, in.MCS.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("reading MultiClusterService %s: %w", in.MCS, err)
		}
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	manifest := &unstructured.Unstructured{Object: map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(), "spec": spec}}
	manifest.SetName(obj.GetName())
	manifest.SetNamespace(obj.GetNamespace())
	manifest.SetLabels(obj.GetLabels())
	lbls := workLabels(in.MCS, naming.RoleCollectRequest)
	if id := obj.GetLabels()[networkingv1alpha1.LabelMCSPermanentID]; id != "" {
		lbls[networkingv1alpha1.LabelMCSPermanentID] = id
	}
	name := naming.WorkName("MultiClusterService", in.MCS.Name, in.MCS.Namespace)
	return newWork(name, naming.ExecutionNamespace(in.Provider), lbls, nil, true, manifest.Object), nil
}
