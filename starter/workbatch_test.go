package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

func work(namespace, name, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetResourceVersion(version)
	return u
}

func TestWorkBatchesGatherPerCluster(t *testing.T) {
	b := newWorkBatches()
	for _, obj := range []any{
		work("karmada-es-member2", "b", "1"),
		work("karmada-es-member2", "a", "2"),
		work("karmada-es-member2", "b", "3"),
		cache.DeletedFinalStateUnknown{Key: "karmada-es-member3/c", Obj: work("karmada-es-member3", "c", "4")},
	} {
		_, err := b.key(obj)
		assert.NoError(t, err)
	}
	key, err := b.key(work("default", "not-in-an-execution-namespace", "5"))
	assert.NoError(t, err)
	assert.Empty(t, key, "Works outside execution namespaces concern no cluster")

	names, versions := b.take("member2")
	assert.Equal(t, []string{"a", "b"}, names)
	assert.Equal(t, map[string]string{"a": "2", "b": "3"}, versions, "the latest version seen of each")
	assert.Equal(t, burstHold, b.holdAfter("member2"), "after a batch of several Works the next signal waits")
	names, _ = b.take("member2")
	assert.Empty(t, names, "taken once")

	_, err = b.key(work("karmada-es-member3", "c", "6"))
	assert.NoError(t, err)
	b.restore("member3", map[string]string{"c": "4", "d": "5"}) // a failed signal puts its Works back
	names, versions = b.take("member3")
	assert.Equal(t, []string{"c", "d"}, names)
	assert.Equal(t, map[string]string{"c": "6", "d": "5"}, versions, "a Work seen again since keeps its newer version")

	_, err = b.key(work("karmada-es-member3", "c", "7"))
	assert.NoError(t, err)
	names, _ = b.take("member3")
	assert.Equal(t, []string{"c"}, names)
	assert.Zero(t, b.holdAfter("member3"), "after a single Work the next signal goes at once")
}

func TestSuspendedWorksConcernExecutionOnlyWithItsFinalizer(t *testing.T) {
	b := newWorkBatches()
	collected := work("karmada-es-member2", "collected", "1")
	assert.NoError(t, unstructured.SetNestedField(collected.Object, true, "spec", "suspendDispatching"))
	key, err := b.key(collected)
	assert.NoError(t, err)
	assert.Empty(t, key, "a suspended Work without the execution finalizer is a record only")

	suspendedLater := collected.DeepCopy()
	suspendedLater.SetName("applied-then-suspended")
	suspendedLater.SetFinalizers([]string{naming.FinalizerExecution})
	key, err = b.key(suspendedLater)
	assert.NoError(t, err)
	assert.Equal(t, "member2", key, "applied before it was suspended: its deletion is execution's")

	names, _ := b.take("member2")
	assert.Equal(t, []string{"applied-then-suspended"}, names)
}
