package mcs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

func cond(t, status, reason, message string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: message}
}

func TestStatusTransitionsReportWhatTurnedFalseAndNewWithdrawals(t *testing.T) {
	collected := networkingv1alpha1.ConditionEndpointSliceCollected
	applied := networkingv1alpha1.ConditionServiceApplied
	before := []metav1.Condition{
		cond(applied, "True", "ServiceAppliedSuccess", "ok"),
		cond(collected, "False", "EndpointSliceCollectedFailed", WithdrawnProblem("member1")),
	}
	after := []metav1.Condition{
		cond(applied, "False", "ServiceAppliedFailed", "member3 unreachable"),
		cond(collected, "False", "EndpointSliceCollectedFailed", WithdrawnProblem("member1")+"; "+WithdrawnProblem("member2")),
		cond(networkingv1alpha1.ConditionReady, "False", "ServiceAppliedFailed", "summed up, not reported again"),
	}
	got := statusTransitions(before, after, []string{"member1", "member2"})
	assert.Equal(t, []string{"member2"}, got.withdrawn, "member1 was withdrawn before")
	assert.Equal(t, []metav1.Condition{after[0], after[1]}, got.failed)

	// The same conditions written again report nothing.
	assert.Equal(t, transitions{}, statusTransitions(after, after, []string{"member1", "member2"}))

	// Slices on their way to a consumer are no failure, however often the count changes.
	pending := []metav1.Condition{cond(networkingv1alpha1.ConditionEndpointSliceApplied, "False", ReasonEndpointSliceAppliedPending,
		"EndpointSlices not yet applied in member2 (0 of 1 applied)")}
	assert.Equal(t, transitions{}, statusTransitions(nil, pending, nil))
}

func TestReadyConditionIsTheFirstThatIsNotTrue(t *testing.T) {
	in := StatusInput{Generation: 3, Conditions: []Condition{
		{Type: networkingv1alpha1.ConditionServiceApplied, Status: "True", Reason: "ServiceAppliedSuccess"},
		{Type: networkingv1alpha1.ConditionEndpointSliceCollected, Status: "False", Reason: "EndpointSliceCollectedFailed", Message: "member1 down"},
		{Type: networkingv1alpha1.ConditionEndpointSliceApplied, Status: "False", Reason: "EndpointSliceAppliedFailed"},
	}}
	ready := readyCondition(in)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "EndpointSliceCollectedFailed", ready.Reason)
	assert.Equal(t, "EndpointSliceCollected: member1 down", ready.Message)
	assert.Equal(t, int64(3), ready.ObservedGeneration)

	in.Conditions = in.Conditions[:1]
	ready = readyCondition(in)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, networkingv1alpha1.ReasonReady, ready.Reason)
}
