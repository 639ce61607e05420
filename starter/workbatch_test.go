package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func work(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func TestWorkBatchesGatherPerCluster(t *testing.T) {
	b := newWorkBatches()
	for _, obj := range []any{
		work("karmada-es-member2", "b"),
		work("karmada-es-member2", "a"),
		work("karmada-es-member2", "b"),
		cache.DeletedFinalStateUnknown{Key: "karmada-es-member3/c", Obj: work("karmada-es-member3", "c")},
	} {
		_, err := b.key(obj)
		assert.NoError(t, err)
	}
	key, err := b.key(work("default", "not-in-an-execution-namespace"))
	assert.NoError(t, err)
	assert.Empty(t, key, "Works outside execution namespaces concern no cluster")

	assert.Equal(t, []string{"a", "b"}, b.take("member2"))
	assert.Equal(t, burstHold, b.holdAfter("member2"), "after a batch of several Works the next signal waits")
	assert.Empty(t, b.take("member2"), "taken once")
	b.add("member3", "d") // a failed signal puts its names back
	assert.Equal(t, []string{"c", "d"}, b.take("member3"))

	b.add("member3", "c")
	assert.Equal(t, []string{"c"}, b.take("member3"))
	assert.Zero(t, b.holdAfter("member3"), "after a single Work the next signal goes at once")
}
