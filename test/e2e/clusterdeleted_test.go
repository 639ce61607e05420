// A member's Cluster object deleted: its workflows end and its Works are released. The case
// runs among the disruptive cases, last and in a declared order (disruptive_test.go).

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// deleteCluster deletes the Cluster object of a member and returns rejoin, which registers it
// again as it was (also run when the test ends).
func deleteCluster(t *testing.T, name string) (rejoin func()) {
	t.Helper()
	clusters := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters)
	saved, err := clusters.Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	// Its credentials go with it (they are bound to it): rejoining binds them to the new one.
	var credentials []*corev1.Secret
	for _, field := range []string{"secretRef", "impersonatorSecretRef"} {
		if secret, _, _ := unstructured.NestedString(saved.Object, "spec", field, "name"); secret != "" {
			s, err := testEnv.ControlPlane.Client().CoreV1().Secrets(env.ClusterSecretNamespace).Get(context.Background(), secret, metav1.GetOptions{})
			require.NoError(t, err)
			credentials = append(credentials, s)
		}
	}
	bind := func(cluster *unstructured.Unstructured) error {
		return env.BindCredentials(context.Background(), testEnv.ControlPlane.Client(), cluster, credentials...)
	}
	rejoin = func() {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": saved.GetAPIVersion(), "kind": saved.GetKind(),
			"metadata": map[string]any{"name": name, "labels": saved.GetLabels()},
			"spec":     saved.Object["spec"],
		}}
		// Beside Karmada, its cluster controller holds a deleted Cluster (finalizer) until it
		// removed the execution namespace: create it again once that one is gone.
		eventually(t, 60*time.Second, func() error {
			current, err := clusters.Get(context.Background(), name, metav1.GetOptions{})
			switch {
			case err == nil && current.GetDeletionTimestamp() != nil:
				return fmt.Errorf("Cluster %s is still being deleted", name)
			case err == nil:
				return bind(current)
			case !apierrors.IsNotFound(err):
				return err
			}
			created, err := clusters.Create(context.Background(), obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("Cluster %s: %w", name, err)
			}
			if err != nil {
				return err
			}
			return bind(created)
		})
	}
	t.Cleanup(rejoin)
	require.NoError(t, clusters.Delete(context.Background(), name, metav1.DeleteOptions{}))
	return rejoin
}

// exposeEverywhereFrom runs the app with one replica on each of the providers, exposed by a
// MultiClusterService to every cluster.
func exposeEverywhereFrom(t *testing.T, ns string, providers ...string) {
	t.Helper()
	for _, p := range providers {
		deployApp(t, testEnv.Member(p), ns, app, 1)
	}
	createService(t, testEnv.ControlPlane, ns, app)
	createMCS(t, ns, app, mcsSpec(nil, nil))
}

// lastRun is the run ID of the workflow's latest run and whether it is running.
func lastRun(c client.Client, workflowID string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return "", false, err
	}
	info := d.GetWorkflowExecutionInfo()
	return info.GetExecution().GetRunId(), info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// testClusterDeletedEndsItsWorkflowsAndReleasesItsWorks: deleting a member's Cluster ends its
// health and execution workflows, removes the Works left in its karmada-es-<name> namespace
// (which carry the execution finalizer) and the namespace, and withdraws its slices from every
// consumer. Neither a later Work change in that namespace nor the ensure loop starts a workflow
// for it again; registered again, it gets both back.
func testClusterDeletedEndsItsWorkflowsAndReleasesItsWorks(t *testing.T) {
	standaloneOnly(t)
	restartStarter(t, "--ensure-period="+testEnsurePeriod.String())
	c := dialTemporal(t)
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	exposeEverywhereFrom(t, ns, m1, m3)
	workflows := []string{clusterhealth.WorkflowID(m3), execution.WorkflowID(m3)}
	logStateOnFailure(t, append([]string{mcs.WorkflowID(ns, app)}, workflows...)...)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1, m3: 1})
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 1})
	space := naming.ExecutionNamespace(m3)
	works := testEnv.ControlPlane.Dynamic().Resource(kube.Works).Namespace(space)
	list, err := works.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	held := 0 // Works that the execution finalizer holds: those applied to the member
	for _, w := range list.Items {
		if slices.Contains(w.GetFinalizers(), naming.FinalizerExecution) {
			held++
		}
	}
	require.NotZero(t, held, "Works in %s: %d", space, len(list.Items))
	runningRuns(t, c, workflows...)

	rejoin := deleteCluster(t, m3)
	ended := map[string]string{}
	eventually(t, 30*time.Second, func() error {
		for _, id := range workflows {
			run, running, err := lastRun(c, id)
			if err != nil {
				return err
			}
			if running {
				return fmt.Errorf("%s still runs", id)
			}
			ended[id] = run
		}
		return nil
	})
	eventually(t, 60*time.Second, func() error {
		_, err := testEnv.ControlPlane.Client().CoreV1().Namespaces().Get(context.Background(), space, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("namespace %s still exists", space)
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		list, err := works.List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) > 0 {
			err = fmt.Errorf("%d Works left in %s", len(list.Items), space)
		}
		return err
	})
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{})
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})

	// A Work written into the namespace of the gone cluster starts nothing, nor does the
	// ensure loop over two of its periods.
	_, err = testEnv.ControlPlane.Client().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}, metav1.CreateOptions{})
	require.NoError(t, err)
	work := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kube.Works.GroupVersion().String(), "kind": "Work",
		"metadata": map[string]any{"name": "left-behind", "namespace": space},
		"spec":     map[string]any{"workload": map[string]any{"manifests": []any{}}},
	}}
	_, err = works.Create(context.Background(), work, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, kube.IgnoreNotFound(works.Delete(context.Background(), "left-behind", metav1.DeleteOptions{})))
	})
	time.Sleep(2*testEnsurePeriod + time.Second)
	for _, id := range workflows {
		run, running, err := lastRun(c, id)
		require.NoError(t, err)
		require.False(t, running, "%s runs again", id)
		require.Equal(t, ended[id], run, "%s was started again", id)
	}

	require.NoError(t, works.Delete(context.Background(), "left-behind", metav1.DeleteOptions{}))
	rejoin()
	expectClusterReady(t, m3, "True")
	runningRuns(t, c, workflows...)
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 1})
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 1})
}
