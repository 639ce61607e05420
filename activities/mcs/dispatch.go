package mcs

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Dispatching: the EndpointSlices collected from a consumer's providers, as Works in its
// execution namespace.

// DispatchEndpointSlices makes the consumer's execution namespace hold one Work per slice
// collected from each listed provider, named after the provider.
func (a *Activities) DispatchEndpointSlices(ctx context.Context, in DispatchInput) (DispatchResult, error) {
	res, err := a.dispatchEndpointSlices(ctx, in)
	res.WorkCache = a.WorkCache.Instance()
	return res, a.Metrics.count("dispatch", err)
}

func (a *Activities) dispatchEndpointSlices(ctx context.Context, in DispatchInput) (DispatchResult, error) {
	// One list serves both sides: the providers' collected Works and the consumer's dispatched ones.
	read := a.listWorks
	if in.CollectedByAgents {
		read = a.listWorksOfOthers
	}
	works, err := read(ctx, in.MCS, a.othersWroteBefore(in.EarlierWrites), naming.RoleCollected, naming.RoleDispatched)
	if err != nil {
		return DispatchResult{}, err
	}
	sources := map[string][]unstructured.Unstructured{}
	for _, provider := range in.Providers {
		sources[provider] = worksIn(works, naming.ExecutionNamespace(provider), naming.RoleCollected)
	}
	portNames, err := a.exposedPortNames(ctx, in.MCS, in.Ports)
	if err != nil {
		return DispatchResult{}, err
	}
	return a.dispatchFrom(ctx, in, portNames, sources, worksIn(works, naming.ExecutionNamespace(in.Consumer), naming.RoleDispatched))
}

// dispatchFrom makes the consumer hold the slices of the collected Works of each provider
// (sources), given the Works dispatched to it now (current) and the names of the ports exposed
// (see exposedPortNames).
func (a *Activities) dispatchFrom(ctx context.Context, in DispatchInput, portNames []string, sources map[string][]unstructured.Unstructured, current []unstructured.Unstructured) (DispatchResult, error) {
	var res DispatchResult
	start := time.Now()
	desired, dropped := desiredDispatched(in, portNames, sources)
	a.reportDropped(ctx, in.MCS, dropped)
	onlyProviders := in.Providers
	if in.Exclusive {
		onlyProviders = nil
	}
	changed, err := a.syncWorks(ctx, current, desired, onlyProviders, in.Unready)
	if err != nil {
		return res, err
	}
	res.Works, res.Changed = len(desired), changed
	if res.Changed {
		a.Metrics.observeSliceSync(in.Consumer, time.Since(earliest(in.DetectedAt, start)))
	}
	return res, nil
}

// desiredDispatched is what the consumer of in is to hold of the slices collected from each of
// its providers (sources): one Work per collected slice of the MultiClusterService's Service,
// by name, and the collected Works left out (collectedSlice).
func desiredDispatched(in DispatchInput, portNames []string, sources map[string][]unstructured.Unstructured) (map[string]*unstructured.Unstructured, []droppedSlice) {
	namespace := naming.ExecutionNamespace(in.Consumer)
	desired := map[string]*unstructured.Unstructured{}
	var dropped []droppedSlice
	for _, provider := range in.Providers {
		if provider == in.Consumer {
			continue
		}
		collected := sources[provider]
		for i := range collected {
			if collected[i].GetDeletionTimestamp() != nil {
				continue // its slice is gone from the provider
			}
			slice, drop := collectedSlice(&collected[i], provider, in.MCS)
			if drop != nil {
				dropped = append(dropped, *drop)
				continue
			}
			manifest := dispatchedSliceManifest(slice, in.MCS, provider, portNames)
			name := naming.WorkName("EndpointSlice", naming.DispatchedSliceName(provider, slice.Name), in.MCS.Namespace)
			lbls := workLabels(in.MCS, naming.RoleDispatched)
			lbls[naming.LabelProvider] = provider
			annotations := map[string]string{
				networkingv1alpha1.AnnotationWorkProvisionCluster: provider,
				networkingv1alpha1.AnnotationProvisionCluster:     provider,
			}
			work := newWork(name, namespace, lbls, annotations, false, manifest)
			if !in.DetectedAt.IsZero() {
				stamped := work.GetAnnotations()
				stamped[naming.AnnotationDetectedAt] = in.DetectedAt.UTC().Format(time.RFC3339Nano)
				work.SetAnnotations(stamped)
			}
			desired[name] = work
		}
	}
	return desired, dropped
}

// exposedPortNames resolves spec.ports to the Service port names whose endpoints are exposed;
// nil means every port.
func (a *Activities) exposedPortNames(ctx context.Context, ref Ref, filters []PortFilter) ([]string, error) {
	if len(filters) == 0 {
		return nil, nil
	}
	svc, err := a.Core.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Service %s: %w", ref, err)
	}
	names := []string{}
	for _, p := range filterPorts(svc.Spec.Ports, filters) {
		names = append(names, p.Name)
	}
	return names, nil
}
