package mcs

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Status and conditions: which dispatched Works are applied, per consumer, and the conditions
// written on the MultiClusterService.

// ObserveApplied counts, per consumer, the dispatched Works that report Applied.
func (a *Activities) ObserveApplied(ctx context.Context, in ObserveAppliedInput) ([]ConsumerApplied, error) {
	res, err := a.observeApplied(ctx, in)
	return res, a.Metrics.count("observe-applied", err)
}

func (a *Activities) observeApplied(ctx context.Context, in ObserveAppliedInput) ([]ConsumerApplied, error) {
	// The Works are read as every step reads them (listWorks): from the cache, which shows this
	// process's writes, and, once the workflow's reads here began, every other's too. The
	// cache may not show yet the status a signal announced: then an answer from it that is not
	// all applied is read again from the API server, Work by Work by name. A list with a label
	// selector costs the API server a pass over every Work of the control plane (0.76 s on
	// average with 26,000 Works while 2,000 MultiClusterServices started), a read by name
	// does not.
	works, fromAPIServer, err := a.readWorks(ctx, in.MCS, a.othersWroteBefore(in.EarlierWrites), naming.RoleDispatched)
	if err != nil {
		return nil, err
	}
	out := appliedPerConsumer(works, in.Consumers)
	if allApplied(out) || !in.Announced || fromAPIServer {
		return out, nil
	}
	works, _, err = a.rereadWorks(ctx, works)
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
