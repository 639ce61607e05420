package workcache

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// heldWork is what the transform makes of data, and whether it is the whole Work.
func heldWork(t testing.TB, data []byte) (*unstructured.Unstructured, bool) {
	t.Helper()
	obj, err := held(decoded(t, data))
	require.NoError(t, err)
	u, whole := workOf(obj)
	require.NotNil(t, u)
	return u, whole
}

// TestHeldKeepsEveryFieldAReaderReads: of the Works the control plane serves, the cache holds
// everything but metadata.managedFields and status.manifestStatuses. Its readers write the
// Work back from their copy (execution's finalizers, the MultiClusterService activities'
// updates), so every field of metadata and spec stays, and the conditions that execution's
// status write keeps; the object given is left as it was, and the transform is idempotent.
func TestHeldKeepsEveryFieldAReaderReads(t *testing.T) {
	for name, data := range map[string][]byte{
		"deployment":       deploymentWorkJSON(1),
		"dispatched slice": dispatchedWorkJSON(1),
		"collected 100":    collectedWorkJSON(1, 100),
	} {
		t.Run(name, func(t *testing.T) {
			served := decoded(t, data)
			given := served.DeepCopy()
			got, whole := heldWork(t, data)
			require.True(t, whole, "held whole")

			want := served.DeepCopy()
			unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
			unstructured.RemoveNestedField(want.Object, "status", "manifestStatuses")
			assert.Equal(t, want, got)
			assert.NotEmpty(t, served.GetManagedFields(), "the fixture has managedFields")

			obj := decoded(t, data)
			_, _ = held(obj)
			assert.Equal(t, given, obj, "the transform writes nothing to the object it is given")
			again, err := held(got.DeepCopy())
			require.NoError(t, err)
			assert.Equal(t, got, again, "the transform is idempotent")
		})
	}
}

// TestHeldOutlinesAWorkTooHeavyToHold: a Work that would weigh more than MaxHeldWeight is held
// as its identity and role labels only, and read as no whole Work; what a Work weighs is
// counted after its trim, so managedFields alone never make an outline.
func TestHeldOutlinesAWorkTooHeavyToHold(t *testing.T) {
	data := paddedWorkJSON(1, 30000)
	require.Less(t, len(data), 1<<20, "a Work the API server stores")
	served := decoded(t, data)
	got, whole := heldWork(t, data)
	assert.False(t, whole)
	assert.Equal(t, map[string]any{
		"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
		"metadata": map[string]any{
			"name": "padded-1", "namespace": "karmada-es-member1", "uid": string(served.GetUID()), "resourceVersion": "400001", "generation": int64(1),
			"labels": map[string]any{
				"multiclusterservice.karmada.io/name": "svc-1", "multiclusterservice.karmada.io/namespace": "demo",
				naming.LabelWorkRole: naming.RoleCollected,
			},
		},
	}, got.Object)
	again, err := held(outline{got})
	require.NoError(t, err)
	assert.Equal(t, outline{got}, again, "an outline passes unchanged")

	// A slice of 1,000 endpoints (the most the EndpointSlice controller puts in one).
	got, whole = heldWork(t, collectedWorkJSON(1, 1000))
	assert.False(t, whole)
	assert.Equal(t, naming.RoleCollected, naming.RoleOf(got.GetLabels()))
	_, hasSpec := got.Object["spec"]
	assert.False(t, hasSpec, "an outline")

	// Heavy only by managedFields: held whole, without them.
	light := decoded(t, dispatchedWorkJSON(2))
	fields := light.GetManagedFields()
	for len(fields) < 2000 {
		fields = append(fields, fields...)
	}
	light.SetManagedFields(fields)
	require.False(t, weighsAtMost(light.Object, MaxHeldWeight))
	obj, err := held(light)
	require.NoError(t, err)
	u, whole := workOf(obj)
	assert.True(t, whole)
	assert.Empty(t, u.GetManagedFields())
}

// TestWeighFollowsTheHeap: weigh is within a factor of two of the heap a decoded Work holds,
// for the shapes an agent may choose to make one heavy (many small map entries, many list
// elements, long strings) and for the Works of the control plane, so that MaxHeldWeight
// bounds the heap of a Work to within that factor.
func TestWeighFollowsTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	listed := func(i int) []byte {
		return []byte(`{"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": {"name": "l"}, "spec": {"workload": {"manifests": [
			{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l"}, "data": [` + strings.Repeat(`[1,2],`, 5000) + `[]]}]}}}`)
	}
	long := func(i int) []byte {
		return []byte(`{"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": {"name": "s"}, "spec": {"workload": {"manifests": [
			{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "` + strings.Repeat("x", 50000) + `"}}]}}}`)
	}
	for name, data := range map[string]func(i int) []byte{
		"deployment":       deploymentWorkJSON,
		"dispatched slice": dispatchedWorkJSON,
		"collected 100":    func(i int) []byte { return collectedWorkJSON(i, 100) },
		"small entries":    func(i int) []byte { return paddedWorkJSON(i, 5000) },
		"list elements":    listed,
		"long string":      long,
	} {
		t.Run(name, func(t *testing.T) {
			const n = 200
			works := make([][]byte, n)
			for i := range works {
				works[i] = data(i)
			}
			heap := heapPerWork(t, works, func(u *unstructured.Unstructured) any { return u })
			weight := weigh(decoded(t, works[0]).Object, 1<<40)
			t.Logf("weight %d, heap %.0f B per Work", weight, heap)
			assert.InDelta(t, 1, float64(weight)/heap, 0.5, "weight %d, heap %.0f", weight, heap)
		})
	}
}

// heapPerWork is the heap that the Works of data hold once decoded and kept as keep makes
// them, per Work, measured after a GC before and after.
func heapPerWork(t testing.TB, data [][]byte, keep func(*unstructured.Unstructured) any) float64 {
	t.Helper()
	kept := make([]any, len(data))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, d := range data {
		kept[i] = keep(decoded(t, d))
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(len(data))
}
