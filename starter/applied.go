package main

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// The Works a MultiClusterService writes for execution (its Service and its dispatched slices)
// are applied by the worker in the same activity that writes them. Work execution is told of
// such a Work only when it is still not applied after executedGrace: the worker crashed in
// between, or the member refused it. A Work being deleted is told at once.
const executedGrace = 5 * time.Second

// appliedByWriter tells a Work that the worker applies as it writes it, and that is not being
// deleted.
func appliedByWriter(u *unstructured.Unstructured) bool {
	if u.GetLabels()[networkingv1alpha1.LabelMCSName] == "" || u.GetDeletionTimestamp() != nil {
		return false
	}
	switch u.GetLabels()[naming.LabelWorkRole] {
	case naming.RoleService, naming.RoleDispatched:
		return true
	}
	return false
}

// writtenWorkKey is the "<namespace>/<name>" of a Work that the worker applies as it writes it.
func writtenWorkKey(obj any) (string, error) {
	u := unstructuredOf(obj)
	if u == nil || !appliedByWriter(u) {
		return "", nil
	}
	return cache.MetaNamespaceKeyFunc(u)
}

// onWrittenWork hands a Work to its cluster's execution workflow when it is still not applied
// at its generation (or is being deleted) once the grace has passed.
func (m *mcsTriggers) onWrittenWork(ctx context.Context, key string) error {
	obj, exists, err := m.worksInformer.GetStore().GetByKey(key)
	if err != nil || !exists {
		return err // gone: its deletion was handed over as it started
	}
	u := obj.(*unstructured.Unstructured)
	cluster, ok := naming.ClusterOfExecutionNamespace(u.GetNamespace())
	if !ok {
		return nil
	}
	if applied, _ := mcsactivities.WorkApplied(u); applied && u.GetDeletionTimestamp() == nil {
		return nil
	}
	m.works.add(cluster, u)
	return m.onWork(ctx, cluster)
}

// The MultiClusterService of a dispatched Work is told that the Works' Applied state changed
// only when its EndpointSliceApplied condition says otherwise: a slice the worker dispatched
// and applied in one activity changes nothing the workflow does not know. Changes on either
// side (a Work's Applied condition, the MultiClusterService's condition) look again.

// appliedDisagrees tells whether the EndpointSliceApplied condition of the MultiClusterService
// key disagrees with its dispatched Works in Ready clusters: success while one is failed or
// pending, or the reverse. Without the condition (no pass wrote it yet) there is nothing to
// correct: the workflow writes it.
func (m *mcsTriggers) appliedDisagrees(key string) bool {
	obj, exists, _ := m.mcs.GetStore().GetByKey(key)
	if !exists {
		return false
	}
	reason := conditionValue(obj.(*unstructured.Unstructured), networkingv1alpha1.ConditionEndpointSliceApplied, "reason")
	if reason == "" {
		return false
	}
	works, _ := m.worksInformer.GetIndexer().ByIndex(worksByMCS, key)
	return appliedReason(works, m.unreadyClusters()) != reason
}

// appliedReason is the reason the EndpointSliceApplied condition has for these Works (of any
// role; only dispatched ones count), those in unready clusters left out, as the workflow
// decides it: failed when one reports a failure, pending when one is not applied yet.
func appliedReason(works []any, unready []string) string {
	pending := false
	for _, obj := range works {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetLabels()[naming.LabelWorkRole] != naming.RoleDispatched {
			continue
		}
		if cluster, ok := naming.ClusterOfExecutionNamespace(u.GetNamespace()); !ok || slices.Contains(unready, cluster) {
			continue
		}
		switch applied, failure := mcsactivities.WorkApplied(u); {
		case failure != "":
			return networkingv1alpha1.ReasonEndpointSliceAppliedFailed
		case !applied:
			pending = true
		}
	}
	if pending {
		return mcs.ReasonEndpointSliceAppliedPending
	}
	return networkingv1alpha1.ReasonEndpointSliceAppliedSuccess
}

// unreadyClusters names the Clusters whose Ready condition is not True.
func (m *mcsTriggers) unreadyClusters() []string {
	var names []string
	for _, obj := range m.clusters.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok && readyStatus(u) != "True" {
			names = append(names, u.GetName())
		}
	}
	return names
}

// appliedReasonChanged: a MultiClusterService matters to the Applied check when the reason of
// its EndpointSliceApplied condition changes.
func appliedReasonChanged(oldObj, newObj metav1.Object) bool {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	return conditionValue(o, networkingv1alpha1.ConditionEndpointSliceApplied, "reason") !=
		conditionValue(n, networkingv1alpha1.ConditionEndpointSliceApplied, "reason")
}

// worksByMCS indexes the starter's Works by their MultiClusterService's key.
const worksByMCS = "mcs"

func indexWorksByMCS(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetLabels()[networkingv1alpha1.LabelMCSName] == "" {
		return nil, nil
	}
	l := u.GetLabels()
	return []string{l[networkingv1alpha1.LabelMCSNamespace] + "/" + l[networkingv1alpha1.LabelMCSName]}, nil
}

// onAppliedCheck tells the MultiClusterService key that its Works' Applied state changed, when
// its condition disagrees with them.
func (m *mcsTriggers) onAppliedCheck(ctx context.Context, key string) error {
	if !m.appliedDisagrees(key) {
		return nil
	}
	namespace, name, err := trigger.SplitKey(key)
	if err != nil {
		return err
	}
	return m.deps.signalOrStart(ctx, kindMCS, m.mcsStart(namespace, name, mcs.Change{Kind: mcs.ChangeWorks, DetectedAt: time.Now()}))
}
