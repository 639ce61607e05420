package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
)

// configMapWork is a Work in the member's execution namespace holding one ConfigMap.
func configMapWork(member, namespace, name string, suspended bool) *unstructured.Unstructured {
	spec := map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"data":     map[string]any{"from": "work"},
	}}}}
	if suspended {
		spec["suspendDispatching"] = true
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
		"metadata": map[string]any{"name": name, "namespace": naming.ExecutionNamespace(member)},
		"spec":     spec,
	}}
}

// history reads every event of the latest run of a workflow.
func history(t *testing.T, workflowID string) []*historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testEnv.Temporal.Dial(ctx)
	require.NoError(t, err)
	defer c.Close()
	var events []*historypb.HistoryEvent
	iter := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		require.NoError(t, err)
		events = append(events, event)
	}
	return events
}

// signalledWorks lists the Works named by the change signals of the latest run of a workflow.
func signalledWorks(t *testing.T, workflowID string) []string {
	t.Helper()
	var names []string
	for _, event := range history(t, workflowID) {
		signal := event.GetWorkflowExecutionSignaledEventAttributes()
		if signal == nil || signal.GetSignalName() != execution.SignalChange {
			continue
		}
		var change execution.Change
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(signal.GetInput(), &change))
		names = append(names, change.Work)
		names = append(names, change.Works...)
	}
	return names
}

// TestSuspendedWorks: a suspended Work is a record only. One that was never applied sends
// Work execution no signal and applies nothing. One applied before it was suspended is still
// execution's to delete: deleting it removes its ConfigMap from the member and releases the
// Work.
func TestSuspendedWorks(t *testing.T) {
	ctx := context.Background()
	m2, member, ns, works := executionNamespaceOfMember2(t)
	record, applied := "suspended-record-"+ns, "applied-then-suspended-"+ns
	t.Cleanup(func() {
		for _, name := range []string{record, applied} {
			_ = works.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})

	_, err := works.Create(ctx, configMapWork(m2, ns, record, true), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = works.Create(ctx, configMapWork(m2, ns, applied, false), metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() error {
		_, err := member.Client().CoreV1().ConfigMaps(ns).Get(ctx, applied, metav1.GetOptions{})
		return err
	})
	w, err := works.Get(ctx, applied, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, w.GetFinalizers(), naming.FinalizerExecution)

	_, err = works.Patch(ctx, applied, types.MergePatchType, []byte(`{"spec":{"suspendDispatching":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, works.Delete(ctx, applied, metav1.DeleteOptions{}))
	eventually(t, 30*time.Second, func() error {
		if _, err := works.Get(ctx, applied, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the deleted Work is still there: %v", err)
		}
		if _, err := member.Client().CoreV1().ConfigMaps(ns).Get(ctx, applied, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the deleted Work's ConfigMap is still in %s: %v", m2, err)
		}
		return nil
	})

	_, err = member.Client().CoreV1().ConfigMaps(ns).Get(ctx, record, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the suspended Work's ConfigMap was applied: %v", err)
	signalled := signalledWorks(t, execution.WorkflowID(m2))
	assert.True(t, slices.Contains(signalled, applied), "the applied Work was signalled: %v", signalled)
	assert.False(t, slices.Contains(signalled, record), "the suspended record was signalled: %v", signalled)
}

// TestExecutionResyncRestoresAChangedObject: a full pass of Work execution leaves alone the
// member objects still as it wrote them (execution.WrittenVersions), and applies the Work again
// over one that someone else changed: the change of resourceVersion gives it away.
func TestExecutionResyncRestoresAChangedObject(t *testing.T) {
	ctx := context.Background()
	m2, member, ns, works := executionNamespaceOfMember2(t)
	name := "changed-by-hand-" + ns
	appliedConfigMapWork(t, works, m2, member, ns, name)
	cm, err := member.Client().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["from"] = "hand"
	_, err = member.Client().CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)

	fullPass(t, m2)
	expectWorkData(t, 60*time.Second, member, ns, name, "the full pass left the changed ConfigMap as it was")
}

// TestExecutionFullPassRemovesOrphans: a full pass of Work execution deletes a member object
// labelled with a Work of its execution namespace that no longer exists, and leaves the objects
// of the Works that do.
func TestExecutionFullPassRemovesOrphans(t *testing.T) {
	ctx := context.Background()
	m2, member, ns, works := executionNamespaceOfMember2(t)
	kept := "kept-" + ns
	appliedConfigMapWork(t, works, m2, member, ns, kept)

	orphan := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: ns, Labels: map[string]string{
			naming.LabelWorkName: "gone-" + ns, naming.LabelWorkNamespace: naming.ExecutionNamespace(m2)}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	_, err := member.Client().CoreV1().Services(ns).Create(ctx, orphan, metav1.CreateOptions{})
	require.NoError(t, err)

	fullPass(t, m2)
	eventually(t, 60*time.Second, func() error {
		_, err := member.Client().CoreV1().Services(ns).Get(ctx, orphan.Name, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("the orphaned Service is still in %s", m2)
		}
		return kube.IgnoreNotFound(err)
	})
	expectWorkData(t, time.Second, member, ns, kept, "the ConfigMap of an existing Work was touched")
}

// TestExecutionAppliesAWorkTooHeavyToCache: a Work heavier than workcache.MaxHeldWeight, which
// the worker's Work cache holds as its outline only, is read from the API server and applied
// all the same, as created and as changed.
func TestExecutionAppliesAWorkTooHeavyToCache(t *testing.T) {
	ctx := context.Background()
	m2, member, ns, works := executionNamespaceOfMember2(t)
	name := "heavy-" + ns
	t.Cleanup(func() { _ = works.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	const entries = 30000
	work := configMapWork(m2, ns, name, false)
	data := manifestData(work)
	for i := range entries {
		data[fmt.Sprintf("k%x", i)] = ""
	}
	_, err := works.Create(ctx, work, metav1.CreateOptions{})
	require.NoError(t, err)
	expectWorkData(t, 60*time.Second, member, ns, name, "the heavy Work's ConfigMap is not applied")
	cm, err := member.Client().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, cm.Data, entries+1)

	current, err := works.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	manifestData(current)["from"] = "changed"
	_, err = works.Update(ctx, current, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, 60*time.Second, func() error {
		cm, err := member.Client().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && cm.Data["from"] != "changed" {
			err = fmt.Errorf("the heavy Work's change is not applied: from=%q", cm.Data["from"])
		}
		return err
	})
}

// manifestData is the data of the ConfigMap of configMapWork, to be changed in place.
func manifestData(work *unstructured.Unstructured) map[string]any {
	manifests := work.Object["spec"].(map[string]any)["workload"].(map[string]any)["manifests"].([]any)
	return manifests[0].(map[string]any)["data"].(map[string]any)
}

// executionNamespaceOfMember2 is what the execution tests work in (standalone only, where
// karmadaflow executes the Works): member2, a test namespace in it, and the Works of member2's
// execution namespace.
func executionNamespaceOfMember2(t *testing.T) (string, *env.Cluster, string, dynamic.ResourceInterface) {
	t.Helper()
	standaloneOnly(t)
	_, m2, _ := members(t)
	member := testEnv.Member(m2)
	ns := testNamespaceIn(t, member)
	return m2, member, ns, testEnv.ControlPlane.Dynamic().Resource(kube.Works).Namespace(naming.ExecutionNamespace(m2))
}

// appliedConfigMapWork creates configMapWork name in the member's execution namespace, deleted
// when the test ends, and waits until its ConfigMap is applied.
func appliedConfigMapWork(t *testing.T, works dynamic.ResourceInterface, cluster string, member *env.Cluster, ns, name string) {
	t.Helper()
	t.Cleanup(func() { _ = works.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err := works.Create(context.Background(), configMapWork(cluster, ns, name, false), metav1.CreateOptions{})
	require.NoError(t, err)
	expectWorkData(t, 30*time.Second, member, ns, name, "the ConfigMap is not applied")
}

// fullPass asks the cluster's Work execution for a full pass (its resync signal).
func fullPass(t *testing.T, cluster string) {
	t.Helper()
	ctx := context.Background()
	c, err := testEnv.Temporal.Dial(ctx)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SignalWorkflow(ctx, execution.WorkflowID(cluster), "", execution.SignalResync, nil))
}

// expectWorkData waits until the ConfigMap name of configMapWork holds the Work's data.
func expectWorkData(t *testing.T, timeout time.Duration, member *env.Cluster, ns, name, failure string) {
	t.Helper()
	eventually(t, timeout, func() error {
		cm, err := member.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && cm.Data["from"] != "work" {
			err = fmt.Errorf("%s: data %v", failure, cm.Data)
		}
		return err
	})
}
