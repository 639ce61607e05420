package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/workcache"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// TestWorkCacheReadsItsOwnWrites: right after this process writes or deletes a Work, the
// cache answers with that write, never with what it held before; a Work read at an announced
// version is at least that new; Works of other MultiClusterServices and changes made by
// others show up too.
func TestWorkCacheReadsItsOwnWrites(t *testing.T) {
	ctx := t.Context()
	client := testEnv.ControlPlane.Dynamic()
	c := workcache.New(client, workcache.MultiClusterServiceWorks)
	cacheCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go c.Run(cacheCtx)

	namespace := "karmada-es-" + testEnv.Members[0].Name
	mcsNamespace := testNamespace(t)
	works := client.Resource(kube.Works).Namespace(namespace)
	work := func(name, mcs, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
			"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{
				networkingv1alpha1.LabelMCSName: mcs, networkingv1alpha1.LabelMCSNamespace: mcsNamespace,
			}, "annotations": map[string]any{"test/value": value}},
			// Suspended: Work execution leaves it alone (no finalizer, nothing applied).
			"spec": map[string]any{"suspendDispatching": true, "workload": map[string]any{"manifests": []any{}}},
		}}
	}
	valuesOf := func(mcs string) map[string]string {
		t.Helper()
		cached, ok := c.Works(ctx, mcsNamespace, mcs)
		require.True(t, ok, "the cache answers once synced and its writes are seen")
		out := map[string]string{}
		for _, w := range cached {
			out[w.GetName()] = w.GetAnnotations()["test/value"]
		}
		return out
	}
	t.Cleanup(func() {
		for _, name := range []string{"wc-a", "wc-b", "wc-other"} {
			_ = works.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})

	eventually(t, 30*time.Second, func() error {
		if _, ok := c.Works(ctx, mcsNamespace, "cached"); !ok {
			return fmt.Errorf("cache not synced")
		}
		return nil
	})

	// 50 rounds: each write is read back at once, whatever the watch's delay.
	for i := range 50 {
		value := fmt.Sprint(i)
		written, err := kube.Apply(ctx, works, work("wc-a", "cached", value))
		require.NoError(t, err)
		c.Wrote(written)
		assert.Equal(t, value, valuesOf("cached")["wc-a"], "round %d: the cache shows the write just made", i)

		written, err = kube.Apply(ctx, works, work("wc-b", "cached", value))
		require.NoError(t, err)
		c.Wrote(written)
		require.NoError(t, works.Delete(ctx, "wc-b", metav1.DeleteOptions{}))
		c.Deleted(written)
		assert.NotContains(t, valuesOf("cached"), "wc-b", "round %d: the cache forgets the Work just deleted", i)
	}

	// A Work read at a version a change announced (by whoever wrote it) is that version or later.
	for i := range 20 {
		value := fmt.Sprint(i)
		written, err := kube.Apply(ctx, works, work("wc-a", "cached", "announced-"+value))
		require.NoError(t, err)
		got, exists, ok := c.Get(ctx, namespace, "wc-a", written.GetResourceVersion())
		require.True(t, ok && exists, "round %d: the cache answers with the announced version", i)
		assert.Equal(t, "announced-"+value, got.GetAnnotations()["test/value"], "round %d", i)
	}

	// A write by someone else (not recorded) shows up once the watch delivers it; Works of
	// another MultiClusterService are kept apart.
	_, err := kube.Apply(ctx, works, work("wc-other", "other", "x"))
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() error {
		if got := valuesOf("other"); got["wc-other"] != "x" {
			return fmt.Errorf("other MultiClusterService's Works in the cache: %v", got)
		}
		return nil
	})
	assert.NotContains(t, valuesOf("cached"), "wc-other")
}

// TestWorkCacheOutlinesAWorkTooHeavyToHold: the cache holds a Work as the API server serves
// it, without managedFields; a Work that would weigh more than workcache.MaxHeldWeight (as an
// agent may write into its execution namespace) it holds as its outline only, and its reads
// go to the API server at once: a read at its version, and the reads of its
// MultiClusterService's Works; Known still names it. Made light again, it is held whole.
func TestWorkCacheOutlinesAWorkTooHeavyToHold(t *testing.T) {
	ctx := t.Context()
	client := testEnv.ControlPlane.Dynamic()
	c := workcache.New(client, workcache.MultiClusterServiceWorks)
	cacheCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go c.Run(cacheCtx)

	namespace := "karmada-es-" + testEnv.Members[0].Name
	mcsNamespace := testNamespace(t)
	works := client.Resource(kube.Works).Namespace(namespace)
	work := func(name string, entries int) *unstructured.Unstructured {
		data := map[string]any{}
		for i := range entries {
			data[fmt.Sprintf("k%x", i)] = ""
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
			"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{
				networkingv1alpha1.LabelMCSName: "outlined", networkingv1alpha1.LabelMCSNamespace: mcsNamespace,
			}},
			// Suspended: Work execution leaves it alone (no finalizer, nothing applied).
			"spec": map[string]any{"suspendDispatching": true, "workload": map[string]any{"manifests": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": mcsNamespace}, "data": data,
			}}}},
		}}
	}
	t.Cleanup(func() {
		for _, name := range []string{"wc-light", "wc-heavy"} {
			_ = works.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	light, err := kube.Apply(ctx, works, work("wc-light", 3))
	require.NoError(t, err)
	require.NotEmpty(t, light.GetManagedFields(), "the API server keeps managedFields")
	heavy, err := kube.Apply(ctx, works, work("wc-heavy", 30000))
	require.NoError(t, err)

	eventually(t, 30*time.Second, func() error {
		if _, ok := c.Known(mcsNamespace, "outlined"); !ok {
			return fmt.Errorf("cache not synced")
		}
		return nil
	})
	got, exists, ok := c.Get(ctx, namespace, "wc-light", light.GetResourceVersion())
	require.True(t, ok && exists, "the cache answers for a light Work")
	assert.Empty(t, got.GetManagedFields())
	assert.Equal(t, light.Object["spec"], got.Object["spec"], "held whole")
	assert.Equal(t, light.GetLabels(), got.GetLabels())

	start := time.Now()
	_, _, ok = c.Get(ctx, namespace, "wc-heavy", heavy.GetResourceVersion())
	assert.False(t, ok, "a heavy Work is read from the API server")
	assert.Less(t, time.Since(start), workcache.MaxWait, "as soon as the cache holds its version")
	_, ok = c.Works(ctx, mcsNamespace, "outlined")
	assert.False(t, ok, "the Works of its MultiClusterService are read from the API server")
	known, ok := c.Known(mcsNamespace, "outlined")
	require.True(t, ok)
	var names []string
	for _, w := range known {
		names = append(names, w.GetName())
		if w.GetName() == "wc-heavy" {
			_, hasSpec := w.Object["spec"]
			assert.False(t, hasSpec, "an outline")
		}
	}
	assert.ElementsMatch(t, []string{"wc-light", "wc-heavy"}, names, "Known names both, to be read by name")

	lightened, err := kube.Apply(ctx, works, work("wc-heavy", 3))
	require.NoError(t, err)
	got, exists, ok = c.Get(ctx, namespace, "wc-heavy", lightened.GetResourceVersion())
	require.True(t, ok && exists, "made light, it is held whole")
	assert.Equal(t, lightened.Object["spec"], got.Object["spec"])
	cached, ok := c.Works(ctx, mcsNamespace, "outlined")
	require.True(t, ok)
	assert.Len(t, cached, 2)
}

// TestReplayedMCSWorkflowReadsItsWorksFromTheCache: a worker that replays a MultiClusterService
// workflow it ran before (its sticky queue reset, as when the workflow left the worker's
// workflow cache) reads the Works at the next reconcile from its Work cache, and lists none
// from the API server; a worker that never ran it lists them (mcs_work_lists_total, reason
// "moved"). The e2e service runs two workers: the reset is repeated until the workflow's own
// worker took the task at least once.
func TestReplayedMCSWorkflowReadsItsWorksFromTheCache(t *testing.T) {
	ns, _, _ := exposeToMember2(t)
	c := dialTemporal(t)
	id := mcs.WorkflowID(ns, app)
	sameWorker := 0
	for attempt := 1; attempt <= 30 && sameWorker == 0; attempt++ {
		ranOn := lastWorkflowTaskWorker(t, c, id)
		before := movedLists(t)
		reconciles := mcsStateOf(t, id).Reconciles
		_, err := c.WorkflowService().ResetStickyTaskQueue(t.Context(), &workflowservice.ResetStickyTaskQueueRequest{
			Namespace: testEnv.Temporal.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id},
		})
		require.NoError(t, err)
		require.NoError(t, c.SignalWorkflow(t.Context(), id, "", mcs.SignalResync, nil))
		eventually(t, 30*time.Second, func() error {
			if s := mcsStateOf(t, id); s.Reconciles <= reconciles || s.Phase != mcs.PhaseReady {
				return fmt.Errorf("the resync's reconcile has not ended well: %d reconciles, phase %s", s.Reconciles, s.Phase)
			}
			return nil
		})
		replayedOn := lastWorkflowTaskWorker(t, c, id)
		after := movedLists(t)
		t.Logf("attempt %d: ran on %s, replayed on %s; lists of moved workflows before %v, after %v", attempt, ranOn, replayedOn, before, after)
		if replayedOn == ranOn {
			sameWorker++
			assert.Equal(t, before[replayedOn], after[replayedOn], "the worker that ran the workflow listed its Works after replaying it")
		} else {
			assert.Greater(t, after[replayedOn], before[replayedOn], "the worker that never ran the workflow read its Works from its cache")
		}
	}
	require.NotZero(t, sameWorker, "the workflow's own worker never took the task after a reset")
}

// lastWorkflowTaskWorker is the worker that started the workflow's latest workflow task.
func lastWorkflowTaskWorker(t *testing.T, c client.Client, workflowID string) string {
	t.Helper()
	identity := ""
	iter := c.GetWorkflowHistory(t.Context(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		if a := e.GetWorkflowTaskStartedEventAttributes(); a != nil {
			identity = a.GetIdentity()
		}
	}
	for _, w := range svc.Workers() {
		if strings.HasPrefix(identity, fmt.Sprintf("%d@", svc.PID(w))) {
			return w
		}
	}
	t.Fatalf("workflow task started by %q, none of the workers %v", identity, svc.Workers())
	return ""
}

// movedLists is, by worker, how often it listed a MultiClusterService's Works because the
// workflow said another worker may have written them.
func movedLists(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, w := range svc.Workers() {
		out[w], _ = metricValue(t, w, `mcs_work_lists_total{reason="moved"}`)
	}
	return out
}
