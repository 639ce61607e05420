package mcs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// Collected slices as dispatch believes them: a collected Work is written by whoever may write
// Works in the provider's execution namespace, a Pull provider's agent among them, so the slice
// it holds is dispatched only if it is one EndpointSlice of the MultiClusterService's own
// Service. Any other is left out and reported, and dispatch goes on with the rest.

// Why a collected slice is left out of dispatch (the mcs_collected_slices_dropped_total label
// "reason").
const (
	// DropUndecodable: the Work does not hold exactly one EndpointSlice.
	DropUndecodable = "undecodable"
	// DropNamespace: the slice is of another namespace than the MultiClusterService's.
	DropNamespace = "namespace"
	// DropService: the slice is labelled (kubernetes.io/service-name) for another Service.
	DropService = "service"
)

// EventReasonCollectedSliceDropped is the reason of the Warning Event on a MultiClusterService
// whose provider's collected Work was left out of dispatch.
const EventReasonCollectedSliceDropped = "CollectedEndpointSliceDropped"

const eventActionDispatch = "DispatchEndpointSlices"

// droppedSlice is a collected Work left out of dispatch, and why.
type droppedSlice struct {
	Provider string
	Work     string                     // namespace/name
	Reason   string                     // one of the Drop reasons
	Detail   string                     // what the Work held instead
	work     *unstructured.Unstructured // what an Event relates to (workReference)
}

// workReference is what an Event needs of a Work to relate to it, whatever the copy at hand
// kept (the Work cache keeps less).
func workReference(work *unstructured.Unstructured) *unstructured.Unstructured {
	ref := &unstructured.Unstructured{}
	ref.SetAPIVersion(kube.Works.GroupVersion().String())
	ref.SetKind("Work")
	ref.SetNamespace(work.GetNamespace())
	ref.SetName(work.GetName())
	ref.SetUID(work.GetUID())
	return ref
}

// collectedSlice is the EndpointSlice a provider's collected Work holds, if it is one of the
// Service of ref (its namespace, and kubernetes.io/service-name its name); otherwise why not.
func collectedSlice(work *unstructured.Unstructured, provider string, ref Ref) (*discoveryv1.EndpointSlice, *droppedSlice) {
	drop := func(reason, detail string) *droppedSlice {
		return &droppedSlice{Provider: provider, Work: work.GetNamespace() + "/" + work.GetName(), Reason: reason, Detail: detail, work: workReference(work)}
	}
	slice, err := sliceOfWork(work)
	if err != nil {
		return nil, drop(DropUndecodable, err.Error())
	}
	service := slice.Labels[networkingv1alpha1.LabelServiceName]
	switch {
	case slice.Namespace != ref.Namespace:
		return nil, drop(DropNamespace, fmt.Sprintf("EndpointSlice %s/%s of Service %q", slice.Namespace, slice.Name, service))
	case service != ref.Name:
		return nil, drop(DropService, fmt.Sprintf("EndpointSlice %s/%s of Service %q", slice.Namespace, slice.Name, service))
	}
	return slice, nil
}

// maxDroppedEvents bounds the Events one dispatch writes of the Works it left out: however many
// a member writes, the metric counts them all.
const maxDroppedEvents = 10

// reportDropped counts each collected Work left out of dispatch, and writes a Warning Event on
// the MultiClusterService for each (at most maxDroppedEvents), related to the Work. The Event
// recorder folds an Event into an earlier one of the same object, related object, reason and
// action, whatever its note: relating each to its Work keeps every Work named. The note names
// no consumer, so that the dispatches to each consumer, which find the same Works, and those of
// later reconciles make one series.
func (a *Activities) reportDropped(ctx context.Context, ref Ref, dropped []droppedSlice) {
	if len(dropped) == 0 {
		return
	}
	for _, d := range dropped {
		a.Metrics.countDropped(d.Reason, d.Provider)
	}
	if a.Events == nil {
		return
	}
	obj, err := a.regarding(ctx, ref)
	if err != nil {
		return // counted; the Event waits for the next dispatch that finds them
	}
	dropped = slices.Clone(dropped)
	slices.SortFunc(dropped, func(x, y droppedSlice) int { return strings.Compare(x.Work, y.Work) })
	for _, d := range dropped[:min(len(dropped), maxDroppedEvents)] {
		a.Events.Eventf(obj, d.work, corev1.EventTypeWarning, EventReasonCollectedSliceDropped, eventActionDispatch, "%s",
			truncate(fmt.Sprintf("%s: %s from %s (%s)", droppedNote(ref, d.Reason), d.Work, d.Provider, d.Detail), maxEventNote))
	}
}

// droppedNote says why a collected Work of reason is not dispatched.
func droppedNote(ref Ref, reason string) string {
	switch reason {
	case DropNamespace:
		return "a collected Work holding an EndpointSlice of another namespace than " + ref.Namespace + " is not dispatched"
	case DropService:
		return "a collected Work holding an EndpointSlice of another Service than " + ref.String() + " is not dispatched"
	default:
		return "a collected Work that does not hold one EndpointSlice is not dispatched"
	}
}

// regarding is the MultiClusterService an Event is about: the copy ObserveMCS read, or a fresh
// read.
func (a *Activities) regarding(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	if obj := a.seen.get(ref); obj != nil {
		return obj, nil
	}
	obj, err := a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading MultiClusterService %s: %w", ref, err)
	}
	return obj, nil
}
