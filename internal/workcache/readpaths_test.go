package workcache

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The cache's reads of the Works its transform holds: a client-go informer lists the Works
// given and then takes the events the test sends, through the cache's transform, index and
// handlers, as it takes the API server's.

// scriptedSource lists its Works and then watches events; it serves no watch-list, as an API
// server may not.
type scriptedSource struct {
	*cache.ListWatch
}

func (scriptedSource) IsWatchListSemanticsUnSupported() bool { return true }

// scriptedCache is a synced cache of works, and the watch its events go to.
func scriptedCache(t *testing.T, works ...*unstructured.Unstructured) (*Cache, *watch.FakeWatcher) {
	t.Helper()
	events := watch.NewFakeWithChanSize(16, false)
	source := scriptedSource{&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "work.karmada.io/v1alpha1", "kind": "WorkList"}}
			list.SetResourceVersion("1")
			for _, w := range works {
				list.Items = append(list.Items, *w.DeepCopy())
			}
			return list, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return events, nil },
	}}
	c := newCache(cache.NewSharedIndexInformer(source, &unstructured.Unstructured{}, 0, cache.Indexers{}))
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go c.Run(ctx)
	require.Eventually(t, c.informer.HasSynced, 10*time.Second, 10*time.Millisecond)
	return c, events
}

// at is w at resourceVersion rv.
func at(w *unstructured.Unstructured, rv string) *unstructured.Unstructured {
	out := w.DeepCopy()
	out.SetResourceVersion(rv)
	return out
}

// awaited is how many writes of this process the cache waits to see.
func (c *Cache) awaited() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, works := range c.awaiting {
		n += len(works)
	}
	return n
}

// TestAHeldWorkAnswersEveryRead: a Work held trimmed is read at the version a change
// announced (waiting for it), among its MultiClusterService's Works, with this process's write
// standing in until the watch shows it, and as gone once deleted; what is read is the Work
// without managedFields and manifest statuses.
func TestAHeldWorkAnswersEveryRead(t *testing.T) {
	ctx := t.Context()
	deployment, dispatched := decoded(t, deploymentWorkJSON(1)), decoded(t, dispatchedWorkJSON(1))
	c, events := scriptedCache(t, deployment, dispatched)
	trimmed := func(w *unstructured.Unstructured) *unstructured.Unstructured {
		out := w.DeepCopy()
		unstructured.RemoveNestedField(out.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(out.Object, "status", "manifestStatuses")
		return out
	}

	got, exists, ok := c.Get(ctx, deployment.GetNamespace(), deployment.GetName(), deployment.GetResourceVersion())
	require.True(t, ok && exists)
	assert.Equal(t, trimmed(deployment), got)

	// The version a change announced: the read waits for the watch to show it.
	changed := at(deployment, "100005")
	changed.SetAnnotations(map[string]string{"changed": "yes"})
	read := make(chan *unstructured.Unstructured)
	go func() {
		got, _, _ := c.Get(ctx, deployment.GetNamespace(), deployment.GetName(), "100005")
		read <- got
	}()
	time.Sleep(50 * time.Millisecond)
	events.Modify(changed)
	assert.Equal(t, trimmed(changed), <-read)

	works, ok := c.Works(ctx, "demo", "svc-1")
	require.True(t, ok)
	assert.Equal(t, []*unstructured.Unstructured{trimmed(dispatched)}, works)

	// This process's write stands in until the watch shows it.
	written := at(dispatched, "200010")
	written.SetAnnotations(map[string]string{naming.AnnotationManifestHash: "written"})
	c.Wrote(written)
	works, ok = c.Works(ctx, "demo", "svc-1")
	require.True(t, ok)
	require.Len(t, works, 1)
	assert.Equal(t, "written", works[0].GetAnnotations()[naming.AnnotationManifestHash])
	events.Modify(written)
	require.Eventually(t, func() bool { return c.awaited() == 0 }, 5*time.Second, 10*time.Millisecond, "the watch showed the write")
	works, ok = c.Works(ctx, "demo", "svc-1")
	require.True(t, ok)
	assert.Equal(t, []*unstructured.Unstructured{trimmed(written)}, works)

	events.Delete(at(changed, "100007"))
	_, exists, ok = c.Get(ctx, deployment.GetNamespace(), deployment.GetName(), "100007")
	assert.True(t, ok)
	assert.False(t, exists, "gone")
}

// TestAnOutlinedWorkIsReadFromTheAPIServer: of a Work held as its outline, a read at a
// version and a read of its MultiClusterService's Works send the caller to the API server at
// once; Known names it (with its role) to be read by name; this process's write of it stands
// in until the watch shows it; and once it is light enough, the cache answers again.
func TestAnOutlinedWorkIsReadFromTheAPIServer(t *testing.T) {
	ctx := t.Context()
	padded, dispatched := decoded(t, paddedWorkJSON(1, 30000)), decoded(t, dispatchedWorkJSON(1))
	c, events := scriptedCache(t, padded, dispatched)
	namespace, name := padded.GetNamespace(), padded.GetName()

	start := time.Now()
	_, _, ok := c.Get(ctx, namespace, name, padded.GetResourceVersion())
	assert.False(t, ok, "read it from the API server")
	assert.Less(t, time.Since(start), MaxWait/2, "without waiting")
	_, ok = c.Works(ctx, "demo", "svc-1")
	assert.False(t, ok, "the MultiClusterService's Works are read from the API server")

	known, ok := c.Known("demo", "svc-1")
	require.True(t, ok)
	roles := map[string]string{}
	for _, w := range known {
		roles[w.GetNamespace()+"/"+w.GetName()] = naming.RoleOf(w.GetLabels())
	}
	assert.Equal(t, map[string]string{
		namespace + "/" + name: naming.RoleCollected, dispatched.GetNamespace() + "/" + dispatched.GetName(): naming.RoleDispatched,
	}, roles)

	// This process's write stands in until the watch shows it, an outline again.
	written := at(padded, "400002")
	c.Wrote(written)
	works, ok := c.Works(ctx, "demo", "svc-1")
	require.True(t, ok, "the write stands in")
	assert.Contains(t, works, written)
	events.Modify(written)
	require.Eventually(t, func() bool { return c.awaited() == 0 }, 5*time.Second, 10*time.Millisecond, "the watch showed the write")
	_, ok = c.Works(ctx, "demo", "svc-1")
	assert.False(t, ok)

	light := at(decoded(t, paddedWorkJSON(1, 10)), "400003")
	events.Modify(light)
	got, exists, ok := c.Get(ctx, namespace, name, "400003")
	require.True(t, ok && exists, "held whole again")
	assert.Equal(t, light.Object["spec"], got.Object["spec"])
	works, ok = c.Works(ctx, "demo", "svc-1")
	require.True(t, ok)
	assert.Len(t, works, 2)

	events.Modify(at(padded, "400004"))
	events.Delete(at(padded, "400005"))
	_, exists, ok = c.Get(ctx, namespace, name, "400005")
	assert.True(t, ok)
	assert.False(t, exists, "an outline's deletion is seen")
}
