package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// TestMCSDeletedByAColdWorker: a MultiClusterService dispatched by one worker, deleted after
// that worker died, is removed whole by the other worker, which started after the dispatch
// and so holds none of its Works in memory: the workflow reaches it through the history, the
// Works through the API server. No Work remains in the control plane, and no slice (nor,
// standalone, Service) in any member; the provider's own Service and endpoints stay.
func TestMCSDeletedByAColdWorker(t *testing.T) {
	ctx := context.Background()
	workers := svc.Workers()
	require.GreaterOrEqual(t, len(workers), 2, "the service runs two workers on the task queue")
	first, cold := workers[0], workers[1]
	t.Cleanup(func() { require.NoError(t, svc.StartWorkers(context.Background())) })

	// Only the first worker runs while the MultiClusterService is dispatched.
	svc.StopInstance(cold)
	ns, m1, m2 := exposeToMember2(t)
	id := mcs.WorkflowID(ns, app)
	logStateOnFailure(t, execution.WorkflowID(m2))
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceApplied, "True")
	works, err := worksOf(ns, app)
	require.NoError(t, err)
	require.Len(t, works, 4, "the Service in both clusters, one collected and one dispatched slice: %v", works)

	// The first worker dies; the other starts with an empty cache and is the only one left.
	svc.Kill(first)
	require.NoError(t, svc.StartComponent(ctx, cold))
	coldPID := svc.PID(cold)

	deleted := time.Now()
	require.NoError(t, testEnv.ControlPlane.Dynamic().Resource(kube.MultiClusterServices).Namespace(ns).Delete(ctx, app, metav1.DeleteOptions{}))
	waitMCSRemoved(t, ns, app, 90*time.Second)
	if !besideKarmada() {
		// Beside Karmada the Service stays in its members, as upstream keeps it.
		for _, c := range testEnv.Members {
			eventually(t, 30*time.Second, func() error { return noObjectOfAWork(c, ns) })
		}
		_, err := testEnv.Member(m2).Client().CoreV1().Services(ns).Get(ctx, app, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "the consumer's Service must be gone: %v", err)
	}
	n, err := ownEndpoints(testEnv.Member(m1), ns, app)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the provider's own endpoints stay")
	t.Logf("deleted by %s %.1fs after the delete", cold, time.Since(deleted).Seconds())

	// The deletion was the cold worker's: it completed the workflow task that deleted the Works.
	identity := deletionIdentity(t, id, deleted)
	require.True(t, strings.HasPrefix(identity, fmt.Sprintf("%d@", coldPID)),
		"the Works were deleted by %q, not by %s (pid %d)", identity, cold, coldPID)
}

// deletionIdentity is the identity of the worker that completed the workflow task in which the
// MultiClusterService's workflow recorded a DeleteWorks after since: that of its deletion. The
// finalizer is released inside that task, so the MultiClusterService can be gone before the
// task's completion, and its markers, reach the history: it waits for them.
func deletionIdentity(t *testing.T, workflowID string, since time.Time) string {
	t.Helper()
	var deletedBy string
	eventually(t, 30*time.Second, func() error {
		var completedBy string
		for _, event := range history(t, workflowID) {
			if task := event.GetWorkflowTaskCompletedEventAttributes(); task != nil {
				completedBy = task.GetIdentity()
			}
			marker := event.GetMarkerRecordedEventAttributes()
			if marker.GetMarkerName() != "LocalActivity" || event.GetEventTime().AsTime().Before(since) {
				continue
			}
			var data struct{ ActivityType string }
			if err := converter.GetDefaultDataConverter().FromPayloads(marker.GetDetails()["data"], &data); err != nil {
				return err
			}
			if data.ActivityType == "DeleteWorks" {
				deletedBy = completedBy
			}
		}
		if deletedBy == "" {
			return fmt.Errorf("no DeleteWorks in the history of %s since the delete", workflowID)
		}
		return nil
	})
	return deletedBy
}

// noObjectOfAWork checks that no Service and no EndpointSlice in namespace of cluster was
// applied from a Work (labelled with one).
func noObjectOfAWork(cluster *env.Cluster, namespace string) error {
	ctx := context.Background()
	selector := metav1.ListOptions{LabelSelector: naming.LabelWorkName}
	services, err := cluster.Client().CoreV1().Services(namespace).List(ctx, selector)
	if err != nil {
		return err
	}
	slices, err := cluster.Client().DiscoveryV1().EndpointSlices(namespace).List(ctx, selector)
	if err != nil {
		return err
	}
	if len(services.Items)+len(slices.Items) > 0 {
		return fmt.Errorf("%s still holds %d Services and %d EndpointSlices of Works", cluster.Name, len(services.Items), len(slices.Items))
	}
	return nil
}
