package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	clusterv1alpha1 "github.com/karmadaflow/karmadaflow/api/cluster/v1alpha1"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Which control-plane events matter to the MultiClusterService triggers, and the keys they map
// to.

// serviceChanged: a Service matters when its spec, labels or annotations change.
func serviceChanged(oldObj, newObj metav1.Object) bool {
	o, ok1 := oldObj.(*corev1.Service)
	n, ok2 := newObj.(*corev1.Service)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Spec, n.Spec) || !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations)
}

// clusterChanged: a Cluster matters when its spec or its Ready condition changes.
func clusterChanged(oldObj, newObj metav1.Object) bool {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 || o.GetGeneration() != n.GetGeneration() || o.GetDeletionTimestamp() != n.GetDeletionTimestamp() {
		return true
	}
	return readyStatus(o) != readyStatus(n)
}

func readyStatus(obj *unstructured.Unstructured) string {
	return conditionValue(obj, clusterv1alpha1.ClusterConditionReady, "status")
}

// conditionValue is a string field (status, reason) of the object's condition of that type;
// empty when it has none.
func conditionValue(obj *unstructured.Unstructured, conditionType, field string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if cond, _ := c.(map[string]any); cond["type"] == conditionType {
			value, _ := cond[field].(string)
			return value
		}
	}
	return ""
}

// appliedChanged: a dispatched Work matters when its Applied condition changes.
func appliedChanged(oldObj, newObj metav1.Object) bool {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	return appliedStatus(o) != appliedStatus(n)
}

func appliedStatus(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if cond, _ := c.(map[string]any); cond["type"] == workv1alpha1.WorkApplied {
			status, _ := cond["status"].(string)
			gen, _ := cond["observedGeneration"].(int64)
			return fmt.Sprintf("%s/%d", status, gen)
		}
	}
	return ""
}

// dispatchedWorkKey maps a dispatched Work to its MultiClusterService's key. A Work that has
// no Applied condition yet (just created by the workflow itself) tells it nothing.
func dispatchedWorkKey(obj any) (string, error) {
	u := unstructuredOf(obj)
	if u == nil || u.GetLabels()[naming.LabelWorkRole] != naming.RoleDispatched || appliedStatus(u) == "" {
		return "", nil
	}
	l := u.GetLabels()
	return l[networkingv1alpha1.LabelMCSNamespace] + "/" + l[networkingv1alpha1.LabelMCSName], nil
}

func unstructuredOf(obj any) *unstructured.Unstructured {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// agentCollectedSelector selects the Works karmada-agent's endpointsliceCollect controller
// writes for a MultiClusterService: marked managed by it, without a role of karmadaflow's.
var agentCollectedSelector = networkingv1alpha1.LabelMCSName + "," + networkingv1alpha1.LabelEndpointSliceWorkManagedBy + ",!" + naming.LabelWorkRole

// agentCollectedKey maps a Work karmada-agent collected to "<cluster>|<namespace>/<name>":
// the provider it was collected from, and its MultiClusterService.
func agentCollectedKey(obj any) (string, error) {
	u := unstructuredOf(obj)
	if u == nil {
		return "", nil
	}
	// The informer's selector picked it; its transform keeps the MultiClusterService labels.
	cluster, ok := naming.ClusterOfExecutionNamespace(u.GetNamespace())
	l := u.GetLabels()
	if !ok || l[networkingv1alpha1.LabelMCSName] == "" {
		return "", nil
	}
	return cluster + "|" + l[networkingv1alpha1.LabelMCSNamespace] + "/" + l[networkingv1alpha1.LabelMCSName], nil
}
