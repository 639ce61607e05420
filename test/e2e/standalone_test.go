package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// TestStandaloneSwitchedOff runs the service as it would run beside a real
// karmada-controller-manager: Work execution and cluster health switched off. The test plays
// Karmada's part: it writes a Cluster's Ready condition, which nobody overwrites, and the
// Applied condition of the dispatched Work, which the MultiClusterService then reports; no
// slice reaches the consumer, because applying it is Karmada's job there.
func TestStandaloneSwitchedOff(t *testing.T) {
	standaloneOnly(t)
	off := []string{"--enable-work-execution=false", "--enable-cluster-health=false"}
	require.NoError(t, svc.Restart(context.Background(), off, off))
	t.Cleanup(func() {
		require.NoError(t, svc.Restart(context.Background(), nil, nil))
	})
	m1, m2, m3 := members(t)

	// Cluster health is Karmada's: a Ready=False written by it stays.
	setClusterReady(t, m3, metav1.ConditionFalse)
	t.Cleanup(func() { setClusterReady(t, m3, metav1.ConditionTrue) })
	time.Sleep(4 * testProbeInterval)
	expectClusterReady(t, m3, "False")

	// Work execution is Karmada's: the dispatched Work is written, nothing is applied.
	ns := testNamespace(t)
	deployApp(t, testEnv.Member(m1), ns, app, 1)
	createService(t, testEnv.ControlPlane, ns, app)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	logStateOnFailure(t, mcs.WorkflowID(ns, app))
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceDispatched, "True")
	work := dispatchedWork(t, ns, app, m2)
	assert.Contains(t, work.GetFinalizers(), naming.FinalizerExecution,
		"Works are created with the execution finalizer, as Karmada's own: its execution controller removes it, and never adds it")
	time.Sleep(4 * time.Second)
	got, err := dispatched(testEnv.Member(m2), ns, app)
	require.NoError(t, err)
	require.Empty(t, got, "nothing is applied to the consumer")
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceApplied, "False")

	// Karmada's execution controller reports the Work applied: the condition follows. The
	// workflow may have updated the Work meanwhile (a new slice generation): read it afresh.
	works := testEnv.ControlPlane.Dynamic().Resource(kube.Works).Namespace(work.GetNamespace())
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := works.Get(context.Background(), work.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, err := kube.Conditions(current)
		if err != nil {
			return err
		}
		meta.SetStatusCondition(&conds, metav1.Condition{Type: "Applied", Status: metav1.ConditionTrue, Reason: "AppliedSuccessful",
			Message: "Manifest has been successfully applied", ObservedGeneration: current.GetGeneration()})
		if err := kube.SetConditions(current, conds); err != nil {
			return err
		}
		_, err = works.UpdateStatus(context.Background(), current, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceApplied, "True")
}

// dispatchedWork returns the MultiClusterService's dispatched Work in consumer's execution
// namespace, once there is one.
func dispatchedWork(t *testing.T, namespace, name, consumer string) *unstructured.Unstructured {
	t.Helper()
	var work *unstructured.Unstructured
	eventually(t, 30*time.Second, func() error {
		list, err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).Namespace(naming.ExecutionNamespace(consumer)).List(context.Background(),
			metav1.ListOptions{LabelSelector: labels.Set{
				networkingv1alpha1.LabelMCSName: name, networkingv1alpha1.LabelMCSNamespace: namespace, naming.LabelWorkRole: naming.RoleDispatched,
			}.String()})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d dispatched Works in %s, want 1", len(list.Items), consumer)
		}
		work = &list.Items[0]
		return nil
	})
	return work
}

// setClusterReady writes the Ready condition of a Cluster, as Karmada's cluster controller would.
func setClusterReady(t *testing.T, cluster string, status metav1.ConditionStatus) {
	t.Helper()
	clusters := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters)
	eventually(t, 30*time.Second, func() error {
		obj, err := clusters.Get(context.Background(), cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, err := kube.Conditions(obj)
		if err != nil {
			return err
		}
		reason := "ClusterReady"
		if status != metav1.ConditionTrue {
			reason = "ClusterNotReachable"
		}
		conds = slices.DeleteFunc(conds, func(c metav1.Condition) bool { return c.Type == "Ready" })
		conds = append(conds, metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: "set by the test", LastTransitionTime: metav1.Now()})
		if err := kube.SetConditions(obj, conds); err != nil {
			return err
		}
		_, err = clusters.UpdateStatus(context.Background(), obj, metav1.UpdateOptions{})
		return err
	})
}
