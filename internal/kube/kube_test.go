package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestConditionsRoundTripKeepsTransitionTime(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	obj := &unstructured.Unstructured{Object: map[string]any{"kind": "Cluster"}}
	require.NoError(t, SetConditions(obj, []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ClusterReady", LastTransitionTime: since}}))

	conds, err := Conditions(obj)
	require.NoError(t, err)
	require.Len(t, conds, 1)
	require.True(t, conds[0].LastTransitionTime.Equal(&since))

	// Setting the same status again keeps the transition time.
	meta.SetStatusCondition(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ClusterReady", Message: "again"})
	require.NoError(t, SetConditions(obj, conds))
	conds, err = Conditions(obj)
	require.NoError(t, err)
	require.True(t, conds[0].LastTransitionTime.Equal(&since))
	require.Equal(t, "again", conds[0].Message)
}

func TestReasonClassifiesErrors(t *testing.T) {
	require.Equal(t, "NotFound", Reason(apierrors.NewNotFound(schema.GroupResource{Resource: "works"}, "w")))
	require.Equal(t, "Timeout", Reason(fmt.Errorf("listing: %w", context.DeadlineExceeded)))
	require.Equal(t, "Unreachable", Reason(&net.OpError{Op: "dial", Err: errors.New("connection refused")}))
	require.Equal(t, "Other", Reason(errors.New("boom")))
}
