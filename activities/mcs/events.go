package mcs

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

// ReasonEndpointSliceAppliedPending is the reason of EndpointSliceApplied while dispatched
// slices are still on their way to a consumer: False, but not a failure.
const ReasonEndpointSliceAppliedPending = "EndpointSliceAppliedPending"

// Reasons and actions of the Events written on a MultiClusterService (kubectl describe mcs).
// A condition that turns False is reported under the condition's own reason, unless it is only
// pending.
const (
	EventReasonProviderWithdrawn = "ProviderWithdrawn"
	EventReasonClusterIgnored    = "ClusterIgnored"
	eventActionReconcile         = "Reconcile"
	eventActionWithdraw          = "WithdrawEndpointSlices"
	// maxEventNote is the longest note the events.k8s.io API accepts.
	maxEventNote = 1024
)

// EventRecorder writes Kubernetes Events; client-go's events.EventRecorder satisfies it.
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// WithdrawnProblem is how the EndpointSliceCollected condition names a provider whose
// EndpointSlices are withdrawn; the status writer finds new withdrawals by it.
func WithdrawnProblem(provider string) string {
	return "provider cluster " + provider + " is not Ready beyond the grace period; its EndpointSlices are withdrawn from consumers"
}

// transitions is what a status write tells users: each condition that turned False (or kept
// False with another message), and each provider withdrawn since the last write.
type transitions struct {
	failed    []metav1.Condition
	withdrawn []string
}

// statusTransitions compares the conditions before a status write with those written.
func statusTransitions(before, after []metav1.Condition, withdrawn []string) transitions {
	var t transitions
	for _, c := range after {
		if c.Status != metav1.ConditionFalse || c.Type == networkingv1alpha1.ConditionReady || c.Reason == ReasonEndpointSliceAppliedPending {
			continue
		}
		if old := meta.FindStatusCondition(before, c.Type); old == nil || old.Status != c.Status || old.Message != c.Message {
			t.failed = append(t.failed, c)
		}
	}
	collectedBefore := messageOf(before, networkingv1alpha1.ConditionEndpointSliceCollected)
	collectedAfter := messageOf(after, networkingv1alpha1.ConditionEndpointSliceCollected)
	for _, p := range withdrawn {
		problem := WithdrawnProblem(p)
		if strings.Contains(collectedAfter, problem) && !strings.Contains(collectedBefore, problem) {
			t.withdrawn = append(t.withdrawn, p)
		}
	}
	return t
}

// report writes an Event on obj for each transition and counts the withdrawals.
func (a *Activities) report(obj runtime.Object, t transitions) {
	for _, p := range t.withdrawn {
		a.Metrics.countWithdrawal(p)
	}
	if a.Events == nil {
		return
	}
	for _, c := range t.failed {
		a.Events.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, eventActionReconcile, "%s", truncate(c.Type+": "+c.Message, maxEventNote))
	}
	for _, p := range t.withdrawn {
		a.Events.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonProviderWithdrawn, eventActionWithdraw, "%s", truncate(WithdrawnProblem(p), maxEventNote))
	}
}

func messageOf(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return c.Message
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
