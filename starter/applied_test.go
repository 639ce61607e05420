package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// mcsWork is a Work of MultiClusterService default/foo in cluster's execution namespace, at
// generation 2, whose Applied condition (if status is set) was observed at observed.
func mcsWork(cluster, role, status string, observed int64, message string) *unstructured.Unstructured {
	u := work(naming.ExecutionNamespace(cluster), role+"-"+cluster, "1")
	u.SetGeneration(2)
	u.SetLabels(map[string]string{networkingv1alpha1.LabelMCSName: "foo", networkingv1alpha1.LabelMCSNamespace: "default", naming.LabelWorkRole: role})
	if status != "" {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"type": "Applied", "status": status, "reason": "r", "message": message,
			"observedGeneration": observed, "lastTransitionTime": "2026-01-01T00:00:00Z",
		}}, "status", "conditions")
	}
	return u
}

func TestWorksTheWorkerAppliesReachExecutionOnlyAfterTheGrace(t *testing.T) {
	b := newWorkBatches()
	for _, role := range []string{naming.RoleService, naming.RoleDispatched} {
		w := mcsWork("member2", role, "", 0, "")
		key, err := b.key(w)
		assert.NoError(t, err)
		assert.Empty(t, key, "a %s Work is applied by the worker that writes it", role)
		key, err = writtenWorkKey(w)
		assert.NoError(t, err)
		assert.Equal(t, "karmada-es-member2/"+role+"-member2", key, "and looked at again after the grace")

		deleting := w.DeepCopy()
		deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		key, err = b.key(deleting)
		assert.NoError(t, err)
		assert.Equal(t, "member2", key, "its deletion is execution's at once")
		key, err = writtenWorkKey(deleting)
		assert.NoError(t, err)
		assert.Empty(t, key)
	}
	key, err := writtenWorkKey(work("karmada-es-member2", "by-hand", "1"))
	assert.NoError(t, err)
	assert.Empty(t, key, "any other Work goes to execution at once")
}

func TestAppliedReasonIsTheWorkflows(t *testing.T) {
	applied := mcsWork("member2", naming.RoleDispatched, "True", 2, "")
	behind := mcsWork("member3", naming.RoleDispatched, "True", 1, "")
	failed := mcsWork("member4", naming.RoleDispatched, "False", 2, "refused")
	unreported := mcsWork("member3", naming.RoleDispatched, "", 0, "")
	service := mcsWork("member3", naming.RoleService, "False", 2, "service Works do not count")

	for _, tc := range []struct {
		name    string
		works   []any
		unready []string
		want    string
	}{
		{"all applied", []any{applied, service}, nil, networkingv1alpha1.ReasonEndpointSliceAppliedSuccess},
		{"none at all", nil, nil, networkingv1alpha1.ReasonEndpointSliceAppliedSuccess},
		{"one behind its generation", []any{applied, behind}, nil, mcs.ReasonEndpointSliceAppliedPending},
		{"one without a condition yet", []any{applied, unreported}, nil, mcs.ReasonEndpointSliceAppliedPending},
		{"one failed", []any{behind, failed}, nil, networkingv1alpha1.ReasonEndpointSliceAppliedFailed},
		{"the failed one's cluster is not Ready", []any{applied, failed}, []string{"member4"}, networkingv1alpha1.ReasonEndpointSliceAppliedSuccess},
	} {
		assert.Equal(t, tc.want, appliedReason(tc.works, tc.unready), tc.name)
	}
}

func TestAppliedReasonChangedLooksAtTheAppliedConditionOnly(t *testing.T) {
	withReason := func(applied, ready string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"type": networkingv1alpha1.ConditionEndpointSliceApplied, "reason": applied},
			map[string]any{"type": networkingv1alpha1.ConditionReady, "reason": ready},
		}, "status", "conditions")
		return u
	}
	assert.False(t, appliedReasonChanged(withReason("A", "x"), withReason("A", "y")))
	assert.True(t, appliedReasonChanged(withReason("A", "x"), withReason("B", "x")))
}
