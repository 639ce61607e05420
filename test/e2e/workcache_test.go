package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/workcache"
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
