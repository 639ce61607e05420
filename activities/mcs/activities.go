// Package mcs does the I/O of a MultiClusterService: it reads the object, its Service and the
// Clusters, writes the Works that propagate the Service, collect provider EndpointSlices and
// dispatch them per consumer, and writes the status. Every write is idempotent.
package mcs

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/workcache"
)

// Activities holds the clients the MultiClusterService activities use.
type Activities struct {
	ControlPlane   dynamic.Interface
	Core           kubernetes.Interface // of the control plane
	Members        *members.Registry
	UnhealthyGrace time.Duration
	Metrics        *Metrics
	// ExecutionFinalizer is set when karmadaflow's own Work execution runs: the Works it will
	// apply are created with its finalizer, which saves execution a write per Work.
	ExecutionFinalizer bool
	// WorkCache, when set, answers reads of the MultiClusterService's Works in place of lists.
	WorkCache *workcache.Cache
	// Events, when set, receives an Event on the MultiClusterService for each failure and
	// provider withdrawal a status write records.
	Events EventRecorder
	// Execution, when set (karmadaflow runs Work execution), applies at once every Work these
	// activities write, and every one they find not applied at its generation, so that a change
	// reaches the members within the workflow task that decided it. The Work stays the record:
	// what this leaves undone, Work execution does.
	Execution WorkApplier

	seen     lastSeen
	services observedServices
}

// ObserveMCS reads the MultiClusterService, whether its Service exists, and the Clusters.
func (a *Activities) ObserveMCS(ctx context.Context, ref Ref) (Observation, error) {
	res, err := a.observeMCS(ctx, ref)
	return res, a.Metrics.count("observe", err)
}

func (a *Activities) observeMCS(ctx context.Context, ref Ref) (Observation, error) {
	var obs Observation
	obj, err := a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		a.seen.put(ref, nil)
		return obs, nil
	}
	if err != nil {
		return obs, fmt.Errorf("reading MultiClusterService %s: %w", ref, err)
	}
	a.seen.put(ref, obj)
	var mcs networkingv1alpha1.MultiClusterService
	if err := kube.FromUnstructured(obj, &mcs); err != nil {
		return obs, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidObject", err)
	}
	obs.Exists = true
	obs.Deleting = mcs.DeletionTimestamp != nil
	obs.HasFinalizer = slices.Contains(mcs.Finalizers, networkingv1alpha1.Finalizer)
	obs.Generation = mcs.Generation
	obs.Invalid = Validate(&mcs)
	obs.CrossCluster = hasType(mcs.Spec.Types, TypeCrossCluster)
	for _, p := range mcs.Spec.Ports {
		obs.Ports = append(obs.Ports, PortFilter{Name: p.Name, Port: p.Port})
	}
	obs.Providers, obs.Consumers = mcs.Spec.ClusterLists()
	obs.UnhealthyGrace = a.UnhealthyGrace

	svc, err := a.Core.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		obs.ServiceExists = true
		a.services.put(ref, svc)
	case !apierrors.IsNotFound(err):
		return obs, fmt.Errorf("reading Service %s: %w", ref, err)
	}

	obs.Clusters, err = a.clusters(ctx)
	return obs, err
}

func (a *Activities) clusters(ctx context.Context) ([]ClusterState, error) {
	list, err := a.ControlPlane.Resource(kube.Clusters).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	out := make([]ClusterState, 0, len(list.Items))
	for _, item := range list.Items {
		state := ClusterState{Name: item.GetName()}
		conds, _, _ := unstructured.NestedSlice(item.Object, "status", "conditions")
		for _, c := range conds {
			cond, _ := c.(map[string]any)
			if cond["type"] != "Ready" {
				continue
			}
			state.Ready = cond["status"] == "True"
			if ts, ok := cond["lastTransitionTime"].(string); ok {
				state.Since, _ = time.Parse(time.RFC3339, ts)
			}
		}
		out = append(out, state)
	}
	slices.SortFunc(out, func(x, y ClusterState) int { return cmp.Compare(x.Name, y.Name) })
	return out, nil
}

// AddFinalizer puts karmadaflow's finalizer on the MultiClusterService.
func (a *Activities) AddFinalizer(ctx context.Context, ref Ref) error {
	return a.Metrics.count("finalizer", a.addFinalizer(ctx, ref))
}

func (a *Activities) addFinalizer(ctx context.Context, ref Ref) error {
	return a.updateFinalizers(ctx, ref, func(f []string) []string {
		if slices.Contains(f, networkingv1alpha1.Finalizer) {
			return nil
		}
		return append(f, networkingv1alpha1.Finalizer)
	})
}

// RemoveFinalizer releases the MultiClusterService once everything it caused is gone.
func (a *Activities) RemoveFinalizer(ctx context.Context, ref Ref) error {
	return a.Metrics.count("finalizer", a.removeFinalizer(ctx, ref))
}

func (a *Activities) removeFinalizer(ctx context.Context, ref Ref) error {
	err := a.updateFinalizers(ctx, ref, func(f []string) []string {
		if !slices.Contains(f, networkingv1alpha1.Finalizer) {
			return nil
		}
		return slices.DeleteFunc(slices.Clone(f), func(s string) bool { return s == networkingv1alpha1.Finalizer })
	})
	if err == nil {
		a.seen.put(ref, nil) // released: the object is gone or going
	}
	return err
}

// updateFinalizers applies edit (nil = nothing to do) with optimistic concurrency.
func (a *Activities) updateFinalizers(ctx context.Context, ref Ref, edit func([]string) []string) error {
	client := a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(ref.Namespace)
	return a.updateMCS(ctx, ref, func(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		finalizers := edit(obj.GetFinalizers())
		if finalizers == nil {
			return nil, nil
		}
		obj.SetFinalizers(finalizers)
		updated, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: naming.FieldManager})
		if err != nil {
			return nil, fmt.Errorf("updating finalizers of MultiClusterService %s: %w", ref, err)
		}
		return updated, nil
	})
}

// PropagateService makes the Service's Work exist in the execution namespace of exactly the
// given clusters.
func (a *Activities) PropagateService(ctx context.Context, in PropagateServiceInput) error {
	return a.Metrics.count("propagate", a.propagateService(ctx, in))
}

func (a *Activities) propagateService(ctx context.Context, in PropagateServiceInput) error {
	start := time.Now()
	svc := a.services.take(in.MCS)
	if svc == nil {
		var err error
		if svc, err = a.Core.CoreV1().Services(in.MCS.Namespace).Get(ctx, in.MCS.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading Service %s: %w", in.MCS, err)
		}
	}
	manifest, err := serviceManifest(svc, in.Ports)
	if err != nil {
		return err
	}
	workName := naming.WorkName("Service", svc.Name, svc.Namespace)
	desired := map[string]*unstructured.Unstructured{}
	for _, cluster := range in.Clusters {
		desired[naming.ExecutionNamespace(cluster)] = newWork(workName, naming.ExecutionNamespace(cluster),
			workLabels(in.MCS, naming.RoleService), nil, false, manifest)
	}
	if err := a.syncServiceWorks(ctx, in.MCS, desired, in.Unready); err != nil {
		return err
	}
	a.Metrics.observeServiceSync(time.Since(earliest(in.DetectedAt, start)))
	return nil
}

// CollectEndpointSlices records the provider's EndpointSlices of the Service as Works in the
// provider's execution namespace, never to be applied back to it.
func (a *Activities) CollectEndpointSlices(ctx context.Context, in CollectInput) (CollectResult, error) {
	res, err := a.collectEndpointSlices(ctx, in)
	return res, a.Metrics.count("collect", err)
}

func (a *Activities) collectEndpointSlices(ctx context.Context, in CollectInput) (CollectResult, error) {
	res, desired, err := a.readProviderSlices(ctx, in)
	if err != nil {
		return res, err
	}
	res.Changed, err = a.syncWorksIn(ctx, naming.ExecutionNamespace(in.Provider), in.MCS, naming.RoleCollected, desired)
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
		lbls[networkingv1alpha1.LabelEndpointSliceName] = in.MCS.Name
		lbls[networkingv1alpha1.LabelEndpointSliceNamespace] = in.MCS.Namespace
		desired[name] = newWork(name, namespace, lbls, nil, true, manifest)
		res.Slices = append(res.Slices, SliceRef{Name: slice.Name, Generation: slice.Generation})
	}
	slices.SortFunc(res.Slices, func(x, y SliceRef) int { return cmp.Compare(x.Name, y.Name) })
	return res, desired, nil
}

// CollectAndDispatch does CollectEndpointSlices and, at the same time, DispatchEndpointSlices
// of the one provider to each consumer, from the slices just read: no consumer waits for the
// collected Work to be written. The Works stay the record, each written as the separate
// activities write it. Only a failure to read the provider fails the activity; a failure to
// write the collected Works or one consumer's is reported for it alone.
func (a *Activities) CollectAndDispatch(ctx context.Context, in CollectAndDispatchInput) (CollectAndDispatchResult, error) {
	res, err := a.collectAndDispatch(ctx, in)
	return res, a.Metrics.count("collect", err)
}

func (a *Activities) collectAndDispatch(ctx context.Context, in CollectAndDispatchInput) (CollectAndDispatchResult, error) {
	res := CollectAndDispatchResult{Dispatched: map[string]DispatchResult{}, DispatchErrs: map[string]string{}}
	collected, desired, err := a.readProviderSlices(ctx, CollectInput{MCS: in.MCS, Provider: in.Provider})
	if err != nil {
		return res, err
	}
	res.Collect = collected
	sources := map[string][]unstructured.Unstructured{in.Provider: derefWorks(sortedWorks(desired))}
	dispatched, err := a.listWorks(ctx, in.MCS, naming.RoleDispatched)
	if err != nil {
		return res, err
	}
	// Every consumer exposes the same ports: the Service is read once for all of them.
	var portNames []string
	var portsErr error
	if len(in.Dispatch) > 0 {
		portNames, portsErr = a.exposedPortNames(ctx, in.MCS, in.Dispatch[0].Ports)
	}
	var mu sync.Mutex
	var group errgroup.Group
	group.Go(func() error {
		changed, err := a.syncWorksIn(ctx, naming.ExecutionNamespace(in.Provider), in.MCS, naming.RoleCollected, desired)
		mu.Lock()
		defer mu.Unlock()
		res.Collect.Changed = changed
		res.CollectErr = errorText(a.Metrics.count("collect", err))
		return nil
	})
	for _, d := range in.Dispatch {
		group.Go(func() error {
			var out DispatchResult
			err := portsErr
			if err == nil {
				current := worksIn(dispatched, naming.ExecutionNamespace(d.Consumer), naming.RoleDispatched)
				out, err = a.dispatchFrom(ctx, d, portNames, sources, current)
			}
			err = a.Metrics.count("dispatch", err)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.DispatchErrs[d.Consumer] = err.Error()
				return nil
			}
			res.Dispatched[d.Consumer] = out
			return nil
		})
	}
	_ = group.Wait()
	return res, nil
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func derefWorks(works []*unstructured.Unstructured) []unstructured.Unstructured {
	out := make([]unstructured.Unstructured, 0, len(works))
	for _, w := range works {
		out = append(out, *w)
	}
	return out
}

// Collectable tells whether a slice is the cluster's own: slices that karmadaflow or Karmada
// dispatched are never collected, so a cluster that both provides and consumes never loops.
func Collectable(slice *discoveryv1.EndpointSlice) bool {
	switch slice.Labels[networkingv1alpha1.LabelEndpointSliceManagedBy] {
	case networkingv1alpha1.ManagedByEndpointSliceDispatch, networkingv1alpha1.ManagedByEndpointSliceKarmada:
		return false
	}
	return true
}

// DispatchEndpointSlices makes the consumer's execution namespace hold one Work per slice
// collected from each listed provider, named after the provider.
func (a *Activities) DispatchEndpointSlices(ctx context.Context, in DispatchInput) (DispatchResult, error) {
	res, err := a.dispatchEndpointSlices(ctx, in)
	return res, a.Metrics.count("dispatch", err)
}

func (a *Activities) dispatchEndpointSlices(ctx context.Context, in DispatchInput) (DispatchResult, error) {
	// One list serves both sides: the providers' collected Works and the consumer's dispatched ones.
	works, err := a.listWorks(ctx, in.MCS, naming.RoleCollected, naming.RoleDispatched)
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
	namespace := naming.ExecutionNamespace(in.Consumer)
	desired := map[string]*unstructured.Unstructured{}
	for _, provider := range in.Providers {
		if provider == in.Consumer {
			continue
		}
		collected := sources[provider]
		for i := range collected {
			slice, err := sliceOfWork(&collected[i])
			if err != nil {
				return res, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidWork", err)
			}
			manifest := dispatchedSliceManifest(slice, provider, portNames)
			sliceName := naming.DispatchedSliceName(provider, slice.Name)
			name := naming.WorkName("EndpointSlice", sliceName, slice.Namespace)
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

// ObserveApplied counts, per consumer, the dispatched Works that report Applied.
func (a *Activities) ObserveApplied(ctx context.Context, in ObserveAppliedInput) ([]ConsumerApplied, error) {
	res, err := a.observeApplied(ctx, in)
	return res, a.Metrics.count("observe-applied", err)
}

func (a *Activities) observeApplied(ctx context.Context, in ObserveAppliedInput) ([]ConsumerApplied, error) {
	// The cache may not show yet the status a signal announced: then an answer that is not
	// all applied is read again from the API server.
	if cached, ok := a.cachedWorks(ctx, in.MCS, naming.RoleDispatched); ok {
		if out := appliedPerConsumer(cached, in.Consumers); allApplied(out) || !in.Announced {
			return out, nil
		}
	}
	works, err := a.listWorksLive(ctx, in.MCS, naming.RoleDispatched)
	if err != nil {
		return nil, err
	}
	return appliedPerConsumer(works, in.Consumers), nil
}

func allApplied(states []ConsumerApplied) bool {
	for _, s := range states {
		if s.Applied < s.Works {
			return false
		}
	}
	return true
}

func appliedPerConsumer(works []unstructured.Unstructured, consumers []string) []ConsumerApplied {
	out := make([]ConsumerApplied, 0, len(consumers))
	for _, consumer := range consumers {
		dispatched := worksIn(works, naming.ExecutionNamespace(consumer), naming.RoleDispatched)
		state := ConsumerApplied{Consumer: consumer, Works: len(dispatched)}
		for _, w := range dispatched {
			applied, message := WorkApplied(&w)
			switch {
			case applied:
				state.Applied++
			case message != "" && state.Message == "":
				state.Message = message
			}
		}
		out = append(out, state)
	}
	return out
}

// WriteStatus replaces the conditions karmadaflow owns, keeping transition times of
// conditions whose status did not change.
func (a *Activities) WriteStatus(ctx context.Context, in StatusInput) error {
	return a.Metrics.count("status", a.writeStatus(ctx, in))
}

func (a *Activities) writeStatus(ctx context.Context, in StatusInput) error {
	client := a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(in.MCS.Namespace)
	return a.updateMCS(ctx, in.MCS, func(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		updated, err := withConditions(obj, in)
		if err != nil {
			return nil, err
		}
		written, err := client.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: naming.FieldManager})
		if err != nil {
			return nil, fmt.Errorf("writing status of MultiClusterService %s: %w", in.MCS, err)
		}
		a.report(written, statusTransitions(conditionsOf(obj), conditionsOf(written), in.Withdrawn))
		return written, nil
	})
}

// withConditions is obj with the conditions karmadaflow owns replaced by in's, keeping the
// transition time of each whose status did not change.
func withConditions(obj *unstructured.Unstructured, in StatusInput) (*unstructured.Unstructured, error) {
	var mcs networkingv1alpha1.MultiClusterService
	if err := kube.FromUnstructured(obj, &mcs); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidObject", err)
	}
	conds := mcs.Status.Conditions
	wanted := map[string]bool{}
	for _, c := range in.Conditions {
		wanted[c.Type] = true
		meta.SetStatusCondition(&conds, metav1.Condition{
			Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
			ObservedGeneration: in.Generation,
		})
	}
	for _, t := range ownedConditionTypes {
		if !wanted[t] {
			meta.RemoveStatusCondition(&conds, t)
		}
	}
	if len(in.Conditions) > 0 {
		meta.SetStatusCondition(&conds, readyCondition(in))
	} else {
		meta.RemoveStatusCondition(&conds, networkingv1alpha1.ConditionReady)
	}
	mcs.Status.Conditions = conds
	return kube.ToUnstructured(&mcs)
}

// readyCondition sums in's conditions up: True when every one is, otherwise the first that is
// not.
func readyCondition(in StatusInput) metav1.Condition {
	ready := metav1.Condition{Type: networkingv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: networkingv1alpha1.ReasonReady, Message: "Every condition of the MultiClusterService is True.", ObservedGeneration: in.Generation}
	for _, c := range in.Conditions {
		if c.Status != string(metav1.ConditionTrue) {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionStatus(c.Status), c.Reason, c.Type+": "+c.Message
			break
		}
	}
	return ready
}

// conditionsOf reads the status conditions of a MultiClusterService; a malformed list reads
// as none.
func conditionsOf(obj *unstructured.Unstructured) []metav1.Condition {
	var mcs networkingv1alpha1.MultiClusterService
	if err := kube.FromUnstructured(obj, &mcs); err != nil {
		return nil
	}
	return mcs.Status.Conditions
}

var ownedConditionTypes = []string{
	networkingv1alpha1.ConditionServiceApplied, networkingv1alpha1.ConditionEndpointSliceCollected,
	networkingv1alpha1.ConditionEndpointSliceDispatched, networkingv1alpha1.ConditionEndpointSliceApplied,
}

// DeleteWorks removes the MultiClusterService's Works of the given roles from every namespace.
func (a *Activities) DeleteWorks(ctx context.Context, in DeleteWorksInput) error {
	return a.Metrics.count("delete", a.deleteWorks(ctx, in))
}

func (a *Activities) deleteWorks(ctx context.Context, in DeleteWorksInput) error {
	works, err := a.listWorks(ctx, in.MCS, in.Roles...)
	if err != nil {
		return err
	}
	for _, w := range works {
		if cluster, ok := naming.ClusterOfExecutionNamespace(w.GetNamespace()); ok && slices.Contains(in.ExceptClusters, cluster) {
			continue
		}
		if err := a.deleteWork(ctx, &w); err != nil {
			return err
		}
	}
	return nil
}

func (a *Activities) deleteWork(ctx context.Context, work *unstructured.Unstructured) error {
	if work.GetDeletionTimestamp() != nil {
		return nil // already going
	}
	err := a.ControlPlane.Resource(kube.Works).Namespace(work.GetNamespace()).Delete(ctx, work.GetName(), metav1.DeleteOptions{})
	if kube.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	}
	a.WorkCache.Deleted(work)
	return nil
}

// syncServiceWorks makes the Service Works of the MultiClusterService exactly the desired ones
// (keyed by namespace), in any namespace.
func (a *Activities) syncServiceWorks(ctx context.Context, ref Ref, desired map[string]*unstructured.Unstructured, unready []string) error {
	works, err := a.listWorks(ctx, ref, naming.RoleService)
	if err != nil {
		return err
	}
	_, err = a.applyWorkSync(ctx, planWorkSync(works, sortedWorks(desired), nil), unready)
	return err
}

// syncWorksIn makes namespace hold exactly the desired Works (by name) of one role of the
// MultiClusterService; it serves the collected Works, which are never executed.
func (a *Activities) syncWorksIn(ctx context.Context, namespace string, ref Ref, role string, desired map[string]*unstructured.Unstructured) (bool, error) {
	if cached, ok := a.cachedWorks(ctx, ref, role); ok {
		return a.syncWorks(ctx, worksIn(cached, namespace, role), desired, nil, nil)
	}
	list, err := a.ControlPlane.Resource(kube.Works).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(workLabels(ref, role)).String()})
	if err != nil {
		return false, fmt.Errorf("listing %s Works of %s in %s: %w", role, ref, namespace, err)
	}
	return a.syncWorks(ctx, list.Items, desired, nil, nil)
}

// syncWorks makes a namespace hold exactly the desired Works, given the ones of the same role
// it holds now. With onlyProviders, only Works dispatched from those providers are candidates
// for deletion. Works of the clusters named unready are left to Work execution.
func (a *Activities) syncWorks(ctx context.Context, current []unstructured.Unstructured, desired map[string]*unstructured.Unstructured, onlyProviders, unready []string) (bool, error) {
	return a.applyWorkSync(ctx, planWorkSync(current, sortedWorks(desired), onlyProviders), unready)
}

// applyWorkSync carries out a plan, and has the Works written, and those held but not applied,
// executed at once (see Execution). A desired Work that is still being deleted is written once
// it is gone: until then the sync reports an error, so that it is retried.
func (a *Activities) applyWorkSync(ctx context.Context, plan workSync, unready []string) (changed bool, err error) {
	for _, w := range plan.remove {
		if err := a.deleteWork(ctx, w); err != nil {
			return changed, err
		}
		changed = true
	}
	toExecute := plan.unapplied
	for _, work := range plan.write {
		held := plan.writeOver[work.GetNamespace()+"/"+work.GetName()]
		write := func() (*unstructured.Unstructured, error) { return a.applyWork(ctx, work, held) }
		var written *unstructured.Unstructured
		var err error
		if cluster, ok := a.appliesWhileWriting(work, held, unready); ok {
			written, err = a.executeWhileWriting(ctx, cluster, held, work, write)
		} else if written, err = write(); err == nil {
			toExecute = append(toExecute, written)
		}
		if err != nil {
			a.execute(ctx, toExecute, unready)
			return changed, err
		}
		changed = true
	}
	a.execute(ctx, toExecute, unready)
	if len(plan.awaitingDeletion) > 0 {
		return changed, fmt.Errorf("Works %s are still being deleted; they are written again once gone", strings.Join(plan.awaitingDeletion, ", "))
	}
	return changed, nil
}

// workSync is what it takes to make the Works held exactly the desired ones.
type workSync struct {
	remove           []*unstructured.Unstructured          // held, not desired
	write            []*unstructured.Unstructured          // desired, missing or with another manifest hash
	writeOver        map[string]*unstructured.Unstructured // of write, the Work held now (namespace/name), if any
	awaitingDeletion []string                              // desired, held but being deleted (namespace/name): written once gone
	unapplied        []*unstructured.Unstructured          // desired, held as desired, but not applied at its generation
}

// planWorkSync compares the Works held (current) with the desired ones by namespace, name and
// manifest hash. With onlyProviders, only Works dispatched from those providers may be
// removed. Works already being deleted are not deleted again.
func planWorkSync(current []unstructured.Unstructured, desired []*unstructured.Unstructured, onlyProviders []string) workSync {
	key := func(w *unstructured.Unstructured) string { return w.GetNamespace() + "/" + w.GetName() }
	wanted := map[string]bool{}
	for _, w := range desired {
		wanted[key(w)] = true
	}
	var plan workSync
	held := map[string]*unstructured.Unstructured{}
	for i := range current {
		w := &current[i]
		held[key(w)] = w
		switch {
		case wanted[key(w)], w.GetDeletionTimestamp() != nil:
		case len(onlyProviders) > 0 && !slices.Contains(onlyProviders, w.GetLabels()[naming.LabelProvider]):
		default:
			plan.remove = append(plan.remove, w)
		}
	}
	for _, work := range desired {
		w, ok := held[key(work)]
		switch {
		case ok && w.GetDeletionTimestamp() != nil:
			plan.awaitingDeletion = append(plan.awaitingDeletion, key(work))
		case ok && w.GetAnnotations()[naming.AnnotationManifestHash] == work.GetAnnotations()[naming.AnnotationManifestHash]:
			if !executable(w) {
				break
			}
			if applied, _ := WorkApplied(w); !applied {
				plan.unapplied = append(plan.unapplied, w)
			}
		default:
			plan.write = append(plan.write, work)
			if ok {
				if plan.writeOver == nil {
					plan.writeOver = map[string]*unstructured.Unstructured{}
				}
				plan.writeOver[key(work)] = w
			}
		}
	}
	return plan
}

// applyWork creates or updates a Work and returns it as written; one that Work execution will
// apply carries its finalizer from the start. A Work not held is created, and one held (as
// last read: held) is updated from that copy, keeping what others set on it; both cost the API
// server far less than a server-side apply. When the copy was stale (Conflict), or the Work
// appeared meanwhile, it is applied.
func (a *Activities) applyWork(ctx context.Context, work, held *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if a.ExecutionFinalizer && executable(work) {
		work = work.DeepCopy()
		work.SetFinalizers([]string{naming.FinalizerExecution})
	}
	client := a.ControlPlane.Resource(kube.Works).Namespace(work.GetNamespace())
	var written *unstructured.Unstructured
	var err error
	if held == nil {
		written, err = client.Create(ctx, work, metav1.CreateOptions{FieldManager: naming.FieldManager})
	} else {
		written, err = client.Update(ctx, updatedWork(held, work), metav1.UpdateOptions{FieldManager: naming.FieldManager})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		written, err = kube.Apply(ctx, client, work)
	}
	if err != nil {
		return nil, fmt.Errorf("writing Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	}
	a.WorkCache.Wrote(written)
	return written, nil
}

// updatedWork is the held Work with the desired one's spec, labels, annotations and finalizers
// added: what others set on it stays.
func updatedWork(held, desired *unstructured.Unstructured) *unstructured.Unstructured {
	out := held.DeepCopy()
	out.Object["spec"] = desired.DeepCopy().Object["spec"]
	out.SetLabels(merged(out.GetLabels(), desired.GetLabels()))
	out.SetAnnotations(merged(out.GetAnnotations(), desired.GetAnnotations()))
	finalizers := out.GetFinalizers()
	for _, f := range desired.GetFinalizers() {
		if !slices.Contains(finalizers, f) {
			finalizers = append(finalizers, f)
		}
	}
	out.SetFinalizers(finalizers)
	delete(out.Object, "status") // written by Work execution through its subresource
	return out
}

func merged(base, more map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(more))
	maps.Copy(out, base)
	maps.Copy(out, more)
	return out
}

// executable tells a Work that Work execution applies: one not suspended (the Works collected
// from providers are records only).
func executable(work *unstructured.Unstructured) bool {
	suspended, _, _ := unstructured.NestedBool(work.Object, "spec", "suspendDispatching")
	return !suspended
}

// Bounds of the Works one activity executes: how many at once, and for how long in all (a
// member that is slow to answer leaves its Works to Work execution instead of holding the
// workflow task).
const (
	inlineParallelism = 8
	inlineTimeout     = 4 * time.Second
)

// execute has the executable Works applied by Work execution's applier, when it runs in this
// worker, except in the clusters named unready. A failure is counted, not returned: the Work is
// written, and Work execution, told of it by the starter, applies it with its own retries.
func (a *Activities) execute(ctx context.Context, works []*unstructured.Unstructured, unready []string) {
	if a.Execution == nil || len(works) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, inlineTimeout)
	defer cancel()
	var group errgroup.Group
	group.SetLimit(inlineParallelism)
	for _, w := range works {
		cluster, ok := naming.ClusterOfExecutionNamespace(w.GetNamespace())
		if !ok || !executable(w) || w.GetDeletionTimestamp() != nil || slices.Contains(unready, cluster) {
			continue
		}
		group.Go(func() error {
			_ = a.Metrics.count("execute", a.Execution.ApplyWork(ctx, cluster, w))
			return nil
		})
	}
	_ = group.Wait()
}

// appliesWhileWriting tells whether an update of work (held: as last read) is brought into
// its member while it is written, and names the member: when Work execution runs in this
// worker, the member is Ready, and the Work held is applied there already, under execution's
// finalizer. A new Work is written first, so that nothing reaches a member before the record
// that owns it.
func (a *Activities) appliesWhileWriting(work, held *unstructured.Unstructured, unready []string) (string, bool) {
	if a.Execution == nil || held == nil || !executable(work) || held.GetDeletionTimestamp() != nil ||
		!slices.Contains(held.GetFinalizers(), naming.FinalizerExecution) {
		return "", false
	}
	cluster, ok := naming.ClusterOfExecutionNamespace(work.GetNamespace())
	return cluster, ok && !slices.Contains(unready, cluster)
}

// executeWhileWriting writes the Work and applies it to the member at the same time, with Work
// execution's applier (bounded as execute is); a failure to apply is counted, not returned.
func (a *Activities) executeWhileWriting(ctx context.Context, cluster string, held, work *unstructured.Unstructured, write func() (*unstructured.Unstructured, error)) (*unstructured.Unstructured, error) {
	memberCtx, cancel := context.WithTimeout(ctx, inlineTimeout)
	defer cancel()
	written, writeErr, applyErr := a.Execution.ApplyWhileWriting(memberCtx, cluster, held, work, write)
	if writeErr == nil {
		_ = a.Metrics.count("execute", applyErr)
	}
	return written, writeErr
}

// WorkApplied tells whether the Work's current generation is applied, and otherwise the
// message of the failure its Applied condition reports. A condition observed at an older
// generation speaks of manifests the Work no longer holds: the Work is pending, not failed. One
// that names no generation (Karmada's own execution controller leaves it out) is taken as it
// stands.
func WorkApplied(work *unstructured.Unstructured) (applied bool, message string) {
	conds, err := kube.Conditions(work)
	if err != nil {
		return false, err.Error()
	}
	cond := meta.FindStatusCondition(conds, workv1alpha1.WorkApplied)
	switch {
	case cond == nil:
		return false, ""
	case cond.ObservedGeneration != 0 && cond.ObservedGeneration < work.GetGeneration():
		return false, ""
	case cond.Status == metav1.ConditionTrue:
		return true, ""
	}
	return false, cond.Message
}

// listWorks reads, in every namespace, the Works of the MultiClusterService with one of roles
// (any role when none is given): from the cache when it can answer, else from the API server.
func (a *Activities) listWorks(ctx context.Context, ref Ref, roles ...string) ([]unstructured.Unstructured, error) {
	if cached, ok := a.cachedWorks(ctx, ref, roles...); ok {
		return cached, nil
	}
	return a.listWorksLive(ctx, ref, roles...)
}

// cachedWorks is what the cache holds of the Works of the MultiClusterService with one of
// roles (any when none is given); ok is false when it cannot answer.
func (a *Activities) cachedWorks(ctx context.Context, ref Ref, roles ...string) ([]unstructured.Unstructured, bool) {
	works, ok := a.WorkCache.Works(ctx, ref.Namespace, ref.Name)
	if !ok {
		return nil, false
	}
	out := make([]unstructured.Unstructured, 0, len(works))
	for _, w := range works {
		if len(roles) == 0 || slices.Contains(roles, w.GetLabels()[naming.LabelWorkRole]) {
			out = append(out, *w)
		}
	}
	return out, true
}

// listWorksLive lists the Works of the MultiClusterService with one of roles from the API server.
func (a *Activities) listWorksLive(ctx context.Context, ref Ref, roles ...string) ([]unstructured.Unstructured, error) {
	selector := labels.NewSelector()
	for key, value := range map[string]string{networkingv1alpha1.LabelMCSName: ref.Name, networkingv1alpha1.LabelMCSNamespace: ref.Namespace} {
		req, err := labels.NewRequirement(key, selection.Equals, []string{value})
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidName", err)
		}
		selector = selector.Add(*req)
	}
	if len(roles) > 0 {
		req, err := labels.NewRequirement(naming.LabelWorkRole, selection.In, roles)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidName", err)
		}
		selector = selector.Add(*req)
	}
	list, err := a.ControlPlane.Resource(kube.Works).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing Works of %s: %w", ref, err)
	}
	return list.Items, nil
}

// worksIn picks the Works of one role in namespace.
func worksIn(works []unstructured.Unstructured, namespace, role string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, w := range works {
		if w.GetNamespace() == namespace && w.GetLabels()[naming.LabelWorkRole] == role {
			out = append(out, w)
		}
	}
	return out
}

func workLabels(ref Ref, role string) map[string]string {
	return map[string]string{networkingv1alpha1.LabelMCSName: ref.Name, networkingv1alpha1.LabelMCSNamespace: ref.Namespace, naming.LabelWorkRole: role}
}
